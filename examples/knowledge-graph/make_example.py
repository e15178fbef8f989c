"""Writes the knowledge-graph example (docs/knowledge-graph.md, "The bundled example"): a small
power grid in Turtle (``graph.ttl``), a reference whose SPARQL steps have their outputs
(``reference.yaml``, the outputs executed against the graph here), and responses of an agent
that logged its queries but not their outputs (``responses.jsonl``): some right, some wrong,
one cut short. Deterministic; needs the ``sparql`` extra (pyoxigraph).

Run from the repository root::

    python examples/knowledge-graph/make_example.py
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pyoxigraph
import yaml

HERE = Path(__file__).resolve().parent
GRID = "https://example.org/grid#"
PREFIX = f"PREFIX grid: <{GRID}>\n"

SUBSTATIONS = {
    # name: (voltage kV, transformers as (name, rated MVA), neighbours)
    "OSLO": (420, [("OSLO T1", 300), ("OSLO T2", 300), ("OSLO T3", 150)], ["ASKER", "DRAMMEN"]),
    "ASKER": (300, [("ASKER T1", 200), ("ASKER T2", 100)], ["DRAMMEN"]),
    "DRAMMEN": (300, [("DRAMMEN T1", 250)], ["KONGSBERG", "TONSBERG"]),
    "KONGSBERG": (132, [("KONGSBERG T1", 80), ("KONGSBERG T2", 80)], []),
    "TONSBERG": (132, [("TONSBERG T1", 120)], ["SANDEFJORD"]),
    "SANDEFJORD": (132, [("SANDEFJORD T1", 90), ("SANDEFJORD T2", 60)], []),
    "BERGEN": (420, [("BERGEN T1", 400), ("BERGEN T2", 400)], ["VOSS"]),
    "VOSS": (132, [("VOSS T1", 50)], []),
}


def _local(name: str) -> str:
    return name.replace(" ", "_")


def graph_turtle() -> str:
    lines = [f"@prefix grid: <{GRID}> .", "@prefix xsd: <http://www.w3.org/2001/XMLSchema#> .", ""]
    line_number = 0
    for name, (voltage, transformers, neighbours) in SUBSTATIONS.items():
        lines += [
            f"grid:{_local(name)} a grid:Substation ;",
            f'    grid:name "{name}" ;',
            f"    grid:nominalVoltage {voltage} .",
        ]
        for transformer, rated in transformers:
            lines += [
                f"grid:{_local(transformer)} a grid:PowerTransformer ;",
                f'    grid:name "{transformer}" ;',
                f"    grid:substation grid:{_local(name)} ;",
                f'    grid:ratedPower "{rated}.0"^^xsd:decimal .',
            ]
        for neighbour in neighbours:
            line_number += 1
            lines += [
                f"grid:L{line_number} a grid:ACLineSegment ;",
                f'    grid:name "{name}-{neighbour}" ;',
                f"    grid:from grid:{_local(name)} ;",
                f"    grid:to grid:{_local(neighbour)} .",
            ]
    return "\n".join(lines) + "\n"


def transformers(name: str) -> str:
    return (
        PREFIX + "SELECT ?transformer ?transformerName WHERE {\n"
        f'  ?substation grid:name "{name}" .\n'
        "  ?transformer a grid:PowerTransformer ; grid:substation ?substation ;\n"
        "               grid:name ?transformerName .\n}"
    )


def capacity(name: str) -> str:
    return (
        PREFIX + "SELECT (SUM(?rated) AS ?capacity) WHERE {\n"
        f'  ?substation grid:name "{name}" .\n'
        "  ?transformer grid:substation ?substation ; grid:ratedPower ?rated .\n}"
    )


def neighbours(name: str) -> str:
    return (
        PREFIX + "SELECT DISTINCT ?neighbourName WHERE {\n"
        f'  ?substation grid:name "{name}" .\n'
        "  { ?line grid:from ?substation ; grid:to ?neighbour }\n"
        "  UNION { ?line grid:to ?substation ; grid:from ?neighbour }\n"
        "  ?neighbour grid:name ?neighbourName .\n}"
    )


def connected(first: str, second: str) -> str:
    return (
        PREFIX + "ASK {\n"
        f'  ?a grid:name "{first}" . ?b grid:name "{second}" .\n'
        "  { ?line grid:from ?a ; grid:to ?b } UNION { ?line grid:from ?b ; grid:to ?a }\n}"
    )


# template id -> (question text, reference query, the agent's query, the agent's answer)
QUESTIONS: dict[str, list[tuple[str, str, str, str]]] = {
    "substation_transformers": [
        (
            "List all transformers within Substation OSLO",
            transformers("OSLO"),
            transformers("OSLO"),  # the same query: right
            "OSLO T1, OSLO T2 and OSLO T3",
        ),
        (
            "List all transformers within Substation ASKER",
            transformers("ASKER"),
            # Other variable names, one column only: the required column still matches.
            PREFIX + 'SELECT ?t WHERE { ?t grid:substation/grid:name "ASKER" }',
            "ASKER T1 and ASKER T2",
        ),
        (
            "List all transformers within Substation DRAMMEN",
            transformers("DRAMMEN"),
            # Wrong: every transformer of the grid (the filter on the substation is missing).
            PREFIX + "SELECT ?transformer ?transformerName WHERE {\n"
            "  ?transformer a grid:PowerTransformer ; grid:name ?transformerName .\n}",
            "There are 14 transformers.",
        ),
    ],
    "substation_capacity": [
        (
            "What is the total rated power of the transformers in KONGSBERG?",
            capacity("KONGSBERG"),
            capacity("KONGSBERG"),
            "160 MVA",
        ),
        (
            "What is the total rated power of the transformers in BERGEN?",
            capacity("BERGEN"),
            # Wrong: the largest transformer, not the sum.
            PREFIX + "SELECT (MAX(?rated) AS ?capacity) WHERE {\n"
            '  ?transformer grid:substation/grid:name "BERGEN" ; grid:ratedPower ?rated .\n}',
            "400 MVA",
        ),
    ],
    "substation_neighbours": [
        (
            "Which substations are connected to DRAMMEN?",
            neighbours("DRAMMEN"),
            neighbours("DRAMMEN"),
            "ASKER, OSLO, KONGSBERG and TONSBERG",
        ),
        (
            "Which substations are connected to TONSBERG?",
            neighbours("TONSBERG"),
            # Wrong: only the lines that start there.
            PREFIX + "SELECT ?neighbourName WHERE {\n"
            '  ?line grid:from/grid:name "TONSBERG" ; grid:to/grid:name ?neighbourName .\n}',
            "SANDEFJORD",
        ),
    ],
    "substations_connected": [
        (
            "Is OSLO connected to ASKER?",
            connected("OSLO", "ASKER"),
            connected("ASKER", "OSLO"),
            "Yes",
        ),
        (
            "Is BERGEN connected to OSLO?",
            connected("BERGEN", "OSLO"),
            connected("BERGEN", "OSLO"),
            "No",
        ),
    ],
}
CUT_SHORT = "List all transformers within Substation OSLO"
"""The agent logged the start of this query's output only (its log cut it): executed."""


def _execute(store: Any, query: str) -> str:
    from graphrag_eval.graph.embedded import sparql_json

    results, _, _ = sparql_json(store.query(query), 10_000)
    return json.dumps(results)


class _Dumper(yaml.SafeDumper):
    """Queries as literal blocks, as a person writes them."""


def _text(dumper: yaml.SafeDumper, text: str) -> yaml.Node:
    style = "|" if "\n" in text else None
    return dumper.represent_scalar("tag:yaml.org,2002:str", text, style=style)


_Dumper.add_representer(str, _text)


def main() -> None:
    turtle = graph_turtle()
    (HERE / "graph.ttl").write_text(turtle, encoding="utf-8")
    store = pyoxigraph.Store()
    store.load(turtle.encode(), format=pyoxigraph.RdfFormat.TURTLE)
    templates, responses = [], []
    for template_id, questions in QUESTIONS.items():
        items = []
        for number, (text, reference_query, agent_query, answer) in enumerate(questions, 1):
            question_id = f"{template_id}_{number}"
            reference_step: dict[str, Any] = {
                "name": "sparql_query",
                "args": {"query": reference_query},
                "output": _execute(store, reference_query),
                "output_media_type": "application/sparql-results+json",
            }
            if template_id == "substation_transformers":
                reference_step["required_columns"] = ["transformer"]
            items.append(
                {"id": question_id, "question_text": text, "reference_steps": [[reference_step]]}
            )
            agent_step: dict[str, Any] = {
                "name": "sparql_query",
                "id": f"call_{question_id}",
                "status": "success",
                "args": {"query": agent_query},
            }
            if text == CUT_SHORT:
                agent_step["output"] = _execute(store, agent_query)[:60]
            responses.append(
                {"question_id": question_id, "actual_answer": answer, "actual_steps": [agent_step]}
            )
        templates.append({"template_id": template_id, "questions": items})
    (HERE / "reference.yaml").write_text(
        yaml.dump(templates, Dumper=_Dumper, sort_keys=False, allow_unicode=True, width=100),
        encoding="utf-8",
    )
    (HERE / "responses.jsonl").write_text(
        "".join(json.dumps(response) + "\n" for response in responses), encoding="utf-8"
    )


if __name__ == "__main__":
    main()
