"""``graphrag-eval import``: a transcript or trace file converted to responses of our own
format, written as JSON Lines for inspection (docs/integrations.md)."""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import click

from graphrag_eval.cli.console import stderr, stdout
from graphrag_eval.cli.errors import EXIT_BAD_INPUT
from graphrag_eval.cli.options import (
    FilePath,
    config_option,
    debug_option,
    max_expanded_size_option,
)
from graphrag_eval.errors import InputError
from graphrag_eval.files.documents import JSONL_SUFFIXES, atomic_stream, read_document
from graphrag_eval.inputs.responses import parse_responses
from graphrag_eval.inputs.traces import (
    FORMATS,
    NATIVE,
    Converted,
    Reading,
    convert_data,
    convert_jsonl,
)
from graphrag_eval.metrics.loading import load_config
from graphrag_eval.report.console import plural, print_notices

__all__ = ["import_command"]


@click.command("import")
@debug_option
@click.argument("responses_format", metavar="FORMAT", type=click.Choice(["auto", *FORMATS[1:]]))
@click.argument("source", metavar="FILE", type=FilePath())
@click.option(
    "-o", "--output", type=FilePath(), required=True, help="The responses file to write (JSONL)."
)
@config_option(
    "YAML config file: its traces: section maps tool names and names the span "
    "attribute of the question id."
)
@max_expanded_size_option
@click.option("--all", "show_all", is_flag=True, help="List every problem found.")
def import_command(
    responses_format: str, source: Path, output: Path, config_path: Path | None, show_all: bool
) -> None:
    """Convert FILE, in FORMAT (openai-chat, openai-responses, langchain, otlp, or auto:
    told from the content), to responses of graphrag-eval's own format, one per line in
    OUTPUT, as evaluate reads them (docs/integrations.md). Problems are listed as evaluate
    would report them; the items they concern are written as far as they could be read.

    \b
    Example:
      graphrag-eval import otlp traces.jsonl -o responses.jsonl
      graphrag-eval import langchain conversations.jsonl -c config.yaml -o responses.jsonl
    """
    config = load_config(config_path)
    if output.resolve() == source.resolve():
        raise click.UsageError("OUTPUT is FILE: write the responses to another file")
    converted = _convert_file(source, Reading(responses_format, config.traces))
    checked = parse_responses(converted, source=str(source))  # what evaluate reports
    records = [value for _, value in converted.records if isinstance(value, Mapping)]
    with atomic_stream(output) as stream:
        for record in records:
            stream.write(_json_line(record))
    console = stdout()
    console.print(
        f"{source}: {plural(len(records), 'response')} ({converted.format}) written to {output}"
    )
    print_notices(console, checked.notices, show_all=show_all, see_all="list them all with --all")
    if not records and (checked.records or checked.notices or converted.skipped):
        stderr().print(f"{source}: no record could be converted", markup=False)
        raise click.exceptions.Exit(EXIT_BAD_INPUT)


def _convert_file(path: Path, reading: Reading) -> Converted:
    label = str(path)
    try:
        if path.suffix.lower() in JSONL_SUFFIXES:
            converted = convert_jsonl(path, label, reading)
        else:
            converted = convert_data(read_document(path, split_items=True), label, reading)
    except FileNotFoundError:
        raise InputError("file not found", file=label) from None
    except ValueError as exc:  # not JSON/YAML, or not UTF-8
        raise InputError(str(exc), file=label) from None
    if converted is None:
        message = f"the file is in graphrag-eval's own format ({NATIVE}): nothing to import"
        raise InputError(message, file=label)
    return converted


def _json_line(record: Mapping[str, Any]) -> bytes:
    try:
        text = json.dumps(record, ensure_ascii=False)
        return (text + "\n").encode("utf-8")
    except UnicodeEncodeError:  # a lone surrogate (a truncated emoji): written escaped
        return (json.dumps(record) + "\n").encode("utf-8")
