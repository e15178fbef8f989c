"""The records of a results file read one at a time, by position or in order, without
holding them (:class:`RecordsFile`): what the HTML report of a large run reads, after
``graphrag-eval evaluate`` wrote the file in reference order (docs/architecture.md, "The
data flow"). Lines are decoded with msgspec, and with the standard ``json`` module where
msgspec refuses one (``NaN``, a lone surrogate, a number out of range), so a record is what
``json.loads`` gives."""

from __future__ import annotations

import json
from array import array
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any, overload

import msgspec

__all__ = ["RecordsFile", "decode_json"]

_decoder = msgspec.json.Decoder()


def decode_json(data: bytes | str) -> Any:
    """``json.loads(data)``, faster: msgspec first, the standard module where it refuses."""
    try:
        return _decoder.decode(data)
    except (msgspec.MsgspecError, ValueError):  # ValueError: not UTF-8
        return json.loads(data)


class RecordsFile(Sequence[dict[str, Any]]):
    """The records of a JSON Lines file whose lines start at ``offsets`` (in order), read
    from the file each time they are asked for."""

    def __init__(self, path: Path, offsets: array[int], end: int) -> None:
        self.path = path
        self.offsets = offsets
        self.end = end

    def __len__(self) -> int:
        return len(self.offsets)

    @overload
    def __getitem__(self, index: int) -> dict[str, Any]: ...

    @overload
    def __getitem__(self, index: slice) -> list[dict[str, Any]]: ...

    def __getitem__(self, index: int | slice) -> dict[str, Any] | list[dict[str, Any]]:
        if isinstance(index, slice):
            return [self[i] for i in range(*index.indices(len(self)))]
        start = self.offsets[index]
        index = index % len(self)
        stop = self.offsets[index + 1] if index + 1 < len(self) else self.end
        with self.path.open("rb") as stream:
            stream.seek(start)
            record: dict[str, Any] = decode_json(stream.read(stop - start))
        return record

    def __iter__(self) -> Iterator[dict[str, Any]]:
        with self.path.open("rb", buffering=1 << 20) as stream:
            for _ in range(len(self)):
                yield decode_json(stream.readline())
