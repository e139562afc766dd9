"""The segment manifest: its file's names and checks, the lazy ``SegmentList`` of a
format-2 manifest, the live file's reference to it, and how a store reads it."""

from __future__ import annotations

import zlib
from collections.abc import Iterator, Sequence
from itertools import repeat
from operator import itemgetter
from pathlib import Path
from typing import Any

from ...model.errors import HandoffError
from ...support.gcpause import gc_paused
from ...support.plainjson import loads as read_json
from ...support.plainjson import orjson
from .files import read_regular
from .layout import MANIFEST_FORMAT, MANIFEST_NAME_RE, SEGMENT_NAME_RE

#: The bytes allowed at each position of a segment name (``seg-<12 hex>-<6
#: digits>.json``, as ``SEGMENT_NAME_RE`` reads it).
_SEGMENT_NAME_COLUMNS = (
    [c.encode() for c in "seg-"]
    + [b"0123456789abcdef"] * 12
    + [b"-"]
    + [b"0123456789"] * 6
    + [c.encode() for c in ".json"]
)
_SEGMENT_NAME_LEN = len(_SEGMENT_NAME_COLUMNS)


def _manifest_names_ok(entries: list[Any]) -> bool:
    """The common case of the manifest check in C-level passes (a fresh process checks
    ~800 entries): every entry a dict, every name a well-formed segment name of the
    one length, every size an int. ``False`` only means "check entry by entry".

    The names are checked column by column (``_names_in_columns``): one regular
    expression over the ~23 KB of names joined took ~4× as long at 553 segments."""
    if not entries:
        return True
    if set(map(type, entries)) != {dict}:
        return False
    names = list(map(dict.get, entries, repeat("name")))
    sizes = list(map(dict.get, entries, repeat("bytes")))
    return (
        set(map(type, names)) == {str}
        and set(map(len, names)) == {_SEGMENT_NAME_LEN}
        and set(map(type, sizes)) == {int}
        and _names_in_columns("".join(names))
    )


def _names_in_columns(joined: str) -> bool:
    """Whether ``joined`` is well-formed segment names laid end to end: every name's
    i-th character is one slice of it, and deleting the bytes allowed at that position
    must leave nothing (C-level passes of ~800 bytes each)."""
    if not joined.isascii():
        return False
    raw, width = joined.encode(), _SEGMENT_NAME_LEN
    return not any(
        raw[i::width].translate(None, allowed) for i, allowed in enumerate(_SEGMENT_NAME_COLUMNS)
    )


def _manifest_entries_ok(entries: Any) -> bool:
    """Whether every manifest entry names a segment and its size."""
    return isinstance(entries, list) and (
        _manifest_names_ok(entries)
        or all(
            isinstance(e, dict)
            and isinstance(e.get("name"), str)
            and SEGMENT_NAME_RE.match(e["name"])
            and type(e.get("bytes")) is int
            for e in entries
        )
    )


def manifest_name(store_id: str, count: int) -> str:
    return f"manifest-{store_id}-{count:06d}.json"


def segment_name(store_id: str, number: int) -> str:
    """The file name of a store's sealed segment ``number`` (1, 2, ...)."""
    return f"seg-{store_id}-{number:06d}.json"


class SegmentList(Sequence):
    """The segment list of a format-2 manifest: ``{"name", "bytes"}`` entries whose
    names are the store's numbers 1..count, made when asked for.

    What a fresh process saves: parsing and checking ~550 entries of names (~0.3-0.5
    ms at 100,000 Sources) for lookups that use a few of them; the sizes (all a
    directory needs to be checked) are one list of numbers. Iterating or slicing
    builds the whole list once; a single entry is built alone. Immutable, like the
    file (a seal builds a new one). Equal to a list of the same entries."""

    __slots__ = ("store_id", "sizes", "_all")

    def __init__(self, store_id: str, sizes: list[int]) -> None:
        self.store_id = store_id
        self.sizes = sizes
        self._all: list[dict[str, Any]] | None = None

    def __len__(self) -> int:
        return len(self.sizes)

    def __getitem__(self, at: Any) -> Any:
        if self._all is not None:
            return self._all[at]
        if isinstance(at, slice):
            return self.materialized()[at]
        size = self.sizes[at]  # IndexError as a list's
        number = at + 1 if at >= 0 else len(self.sizes) + at + 1
        return {"name": segment_name(self.store_id, number), "bytes": size}

    def __iter__(self) -> Iterator[dict[str, Any]]:
        return iter(self.materialized())

    def __eq__(self, other: object) -> bool:
        if isinstance(other, SegmentList):
            return self.store_id == other.store_id and self.sizes == other.sizes
        if isinstance(other, (list, tuple)):
            return self.materialized() == list(other)
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"SegmentList({self.store_id!r}, {len(self.sizes)} segments)"

    def materialized(self) -> list[dict[str, Any]]:
        """Every entry, built once."""
        if self._all is None:
            sid = self.store_id
            self._all = [
                {"name": segment_name(sid, n), "bytes": size}
                for n, size in enumerate(self.sizes, 1)
            ]
        return self._all


def manifest_reference(store_id: str, blob: bytes, count: int) -> dict[str, Any]:
    """What the live file keeps of a manifest file: its name, count, size and CRC-32."""
    name = manifest_name(store_id, count)
    return {"name": name, "count": count, "bytes": len(blob), "crc32": zlib.crc32(blob)}


def _reference_ok(ref: Any) -> bool:
    """Whether a live file's manifest reference is well formed."""
    if not isinstance(ref, dict) or not isinstance(ref.get("name"), str):
        return False
    m = MANIFEST_NAME_RE.match(ref["name"])
    return (
        m is not None
        and all(type(ref.get(k)) is int for k in ("count", "bytes", "crc32"))
        and ref["count"] == int(m.group(2)) >= 1
    )


def _reference_key(ref: dict[str, Any]) -> tuple[Any, ...]:
    return (ref["name"], ref["count"], ref["bytes"], ref["crc32"])


def _rising(names: list[str]) -> bool:
    """Whether the names rise strictly (C-level: a sort and a set of ~800 names)."""
    return names == sorted(names) and len(set(names)) == len(names)


class ManifestProblem(Exception):
    """The manifest file a live file names cannot be used (``reason``: a code for the
    error's data, ``manifest_missing`` or ``manifest_damaged``)."""

    def __init__(self, path: Path, problem: str, reason: str) -> None:
        super().__init__(f"{path}: {problem}")
        self.path, self.problem, self.reason = path, problem, reason


class _ManifestMoved(Exception):
    """The live file changed while the manifest it named was being read."""


#: Reads of the live file a lock-free reader makes when the manifest it names was
#: swept meanwhile (by a seal two seals later: a reader that slow reads again).
MANIFEST_READ_TRIES = 3


_NAME, _BYTES = itemgetter("name"), itemgetter("bytes")


class ManifestReading:
    """The manifest side of ``StateStore``: the check of an inline manifest and the
    manifest file a live file names, read and checked once per process."""

    def _manifest_well_formed(self, segments: Any) -> bool:
        """Whether every manifest entry names a segment and its size.

        Checked-prefix cache: a manifest only grows at its end, so the entries this
        process already checked are compared as a whole (one C-level list comparison)
        and only the new ones are checked one by one; a commit no longer pays for every
        entry of a long history (docs/performance.md, "Commit cost").
        """
        if not isinstance(segments, list):
            return False
        known = self._checked_manifest
        start = len(known) if segments[: len(known)] == known else 0
        if not _manifest_entries_ok(segments[start:]):
            return False
        self._checked_manifest = known[:start] + [dict(e) for e in segments[start:]]
        return True

    def _manifest_entries(self, ref: dict[str, Any], store_id: str) -> list[dict[str, Any]]:
        """The segment list of the manifest file ``ref`` names, read and checked once
        per process: the file never changes (a seal writes a new one), so a
        transaction parses a small live file, not a list of ~800 entries. The list is
        shared: do not mutate it."""
        key = _reference_key(ref)
        kept = self._manifest_kept
        if kept is not None and kept[0] == key:
            return kept[1]
        entries = self.read_manifest(ref, store_id)
        with self._cache_lock:
            self._manifest_kept = (key, entries)
        return entries

    def read_manifest(self, ref: dict[str, Any], store_id: str) -> list[dict[str, Any]]:
        """The entries of a manifest file, checked against the live file's reference
        (size and CRC-32 of the whole file) and its own header; ``ManifestProblem``."""
        path = self.segment_dir / ref["name"]
        try:
            raw, _ = read_regular(path)
        except FileNotFoundError:
            raise ManifestProblem(path, "is missing", "manifest_missing") from None
        except OSError as exc:
            raise ManifestProblem(
                path, f"cannot be read ({exc.strerror})", "manifest_damaged"
            ) from None
        if len(raw) != ref["bytes"] or zlib.crc32(raw) != ref["crc32"]:
            raise ManifestProblem(
                path,
                "does not match the size and checksum the live file records for it "
                "(damaged, or not this store's)",
                "manifest_damaged",
            )
        try:
            with gc_paused(promote=True):  # ~800 dicts that live as long as the process
                body = read_json(raw)
        except orjson.JSONDecodeError:
            raise ManifestProblem(path, "does not parse", "manifest_damaged") from None
        if not isinstance(body, dict) or body.get("type") != "handoff_manifest":
            raise ManifestProblem(path, "is not a handoff segment manifest", "manifest_damaged")
        if type(body.get("format")) is not int or body["format"] > MANIFEST_FORMAT:
            raise ManifestProblem(
                path,
                f"was written by a newer handoff (manifest format {body.get('format')})",
                "manifest_damaged",
            )
        if body.get("storeId") != store_id:
            raise ManifestProblem(path, "belongs to another store", "manifest_damaged")
        if body["format"] >= 2:
            sizes = body.get("sizes")
            if not (
                isinstance(sizes, list)
                and set(map(type, sizes)) <= {int}
                and len(sizes) == body.get("count") == ref["count"]
                and SEGMENT_NAME_RE.match(segment_name(store_id, 1))
            ):
                raise ManifestProblem(path, "is malformed", "manifest_damaged")
            return SegmentList(store_id, sizes)
        entries = body.get("segments")
        if (
            not _manifest_entries_ok(entries)
            or not len(entries) == body.get("count") == ref["count"]
        ):
            raise ManifestProblem(path, "is malformed", "manifest_damaged")
        return entries

    def _manifest_error(self, exc: ManifestProblem) -> HandoffError:
        return HandoffError(
            "store_corrupt",
            f"The segment manifest {exc.path} named by {self.path} {exc.problem}. Nothing "
            "was changed; `handoff store repair` rebuilds it from the sealed segments "
            "(checked against the checksum the state file records).",
            stateFile=str(self.path),
            manifestFile=str(exc.path),
            reason=exc.reason,
        )
