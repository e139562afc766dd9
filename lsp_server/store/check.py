"""``handoff store check`` and ``handoff store repair``: verify a whole store (layout,
live file, segment manifest, marker, every segment's checksums, every revision's digest,
sequence numbers) and make the explicit repairs; nothing here runs on its own."""

from __future__ import annotations

import os
import time
import zlib
from pathlib import Path
from typing import Any

import orjson

from ..model.errors import HandoffError
from ..model.lifecycle import revision_intact
from .embedded import StateStore
from .embedded.durable import atomic_write
from .embedded.files import read_regular
from .embedded.journal import JournalDamaged, apply_journal
from .embedded.layout import SCHEMA_VERSION, SEALED_TABLES, STATE_FILE, TABLES
from .embedded.manifest import ManifestProblem
from .embedded.seal import manifest_blob


def _problem(kind: str, message: str, **data: Any) -> dict[str, Any]:
    return {"problem": kind, "message": message, **data}


def _read_live(store: StateStore) -> tuple[dict[str, Any] | None, list[dict[str, Any]]]:
    """The live file parsed without side effects (nothing is moved aside here)."""
    try:
        raw, _ = read_regular(store.path)
    except FileNotFoundError:
        from ..support.faults import pause_point  # a rare path

        pause_point("check.missing")
        signs = store.lost_signs() if store.folder.is_dir() else []
        if not signs:
            return None, []
        # A store's first write saves the live file before any of the signs: signs
        # without it may be a first write that landed meanwhile, so look once more.
        try:
            raw, _ = read_regular(store.path)
        except FileNotFoundError:
            return None, [_problem("state_missing", "; ".join(signs), stateFile=str(store.path))]
        except OSError as exc:
            return None, [_problem("unreadable", f"{store.path}: {exc.strerror}")]
    except OSError as exc:
        return None, [_problem("unreadable", f"{store.path}: {exc.strerror}")]
    try:
        data = orjson.loads(raw)
    except orjson.JSONDecodeError as exc:
        return None, [_problem("not_json", f"{store.path} is not valid JSON ({exc})")]
    shape = store._shape_problem(data)
    if shape is not None:
        return None, [_problem("malformed", f"{store.path}: {shape}")]
    if data["_meta"]["1"]["schema"] > SCHEMA_VERSION:
        return None, [_problem("newer_schema", f"{store.path} was written by a newer handoff")]
    for name in TABLES:
        data.setdefault(name, {})
    try:
        journal, _ = read_regular(store.journal_path)
    except FileNotFoundError:
        return data, []
    except OSError as exc:
        return None, [_problem("unreadable", f"{store.journal_path}: {exc.strerror}")]
    try:
        apply_journal(data, journal, data["_meta"]["1"].get("journal"))
    except JournalDamaged as exc:
        return None, [
            _problem(
                "journal_damaged",
                f"{store.journal_path}: line {exc.line} is not whole but later ones are",
                journalFile=str(store.journal_path),
            )
        ]
    return data, []


def check_store(store: StateStore) -> dict[str, Any]:
    """Everything wrong with a store, read only; ``ok`` when nothing is."""
    problems: list[dict[str, Any]] = []
    counts = {"segments": 0, "sources": 0, "revisions": 0}
    try:
        store._refuse_symlinks()
    except HandoffError as exc:
        problems.append(_problem(exc.data.get("reason", "layout"), exc.message))
        return {"ok": False, "stateFile": str(store.path), "counts": counts, "problems": problems}
    live, found = _read_live(store)
    problems += found
    store_id = None
    if live is not None:
        meta = live["_meta"]["1"]
        store_id = meta.get("storeId")
        marker = store.read_marker()
        if store_id is not None and marker not in (None, store_id):
            problems.append(
                _problem(
                    "marker_mismatch",
                    f"{store.marker_path} names store {marker}, the state file {store_id}",
                )
            )
        entries, found = _listed_segments(store, meta)
        problems += found
        counts["segments"] = len(entries)
        sealed: dict[str, dict[str, Any]] = {name: {} for name in SEALED_TABLES}
        for entry in entries:
            try:
                records = store._segment_records(store._segment(entry), cache=False)
            except HandoffError as exc:
                problems.append(_problem("segment", exc.message, segmentFile=entry.get("name")))
                continue
            for name in SEALED_TABLES:
                sealed[name].update(records[name])
        for name in SEALED_TABLES:
            sealed[name].update(live.get(name) or {})
        counts["sources"] = len(sealed["sources"])
        counts["revisions"] = len(sealed["revisions"])
        for rec in sealed["revisions"].values():
            if (
                isinstance(rec, dict)
                and isinstance(rec.get("ref"), str)
                and not revision_intact(rec)
            ):
                problems.append(
                    _problem(
                        "digest_mismatch",
                        f"revision {rec['ref']} does not match its digest "
                        "(changed on disk after it was committed)",
                        revision=rec["ref"],
                    )
                )
        top = _top_seq(sealed)
        if top >= meta["nextSeq"]:
            problems.append(
                _problem(
                    "next_seq_behind",
                    f"nextSeq is {meta['nextSeq']} but the log already holds {top}",
                    nextSeq=meta["nextSeq"],
                    highestSeq=top,
                )
            )
    return {
        "ok": not problems,
        "stateFile": str(store.path),
        "storeId": store_id,
        "counts": counts,
        "problems": problems,
    }


def _listed_segments(
    store: StateStore, meta: dict[str, Any]
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """The segments the live file lists: inline (schema 2) or in the manifest file it
    names (schema 3), that file checked against the live file's reference."""
    if meta["schema"] < 3:
        return meta.get("segments") or [], []
    ref = meta.get("manifest")
    if ref is None:
        return [], []
    try:
        return store.read_manifest(ref, meta["storeId"]), []
    except ManifestProblem as exc:
        message = store._manifest_error(exc).message
        return [], [_problem(exc.reason, message, manifestFile=str(exc.path))]


def _rebuild_manifest(store: StateStore) -> str | None:
    """Write the manifest file the live file names again, from the sealed segments on
    disk, when it is missing or damaged; kept only when its bytes match the size and
    CRC-32 the live file records (then it is the file the last seal wrote)."""
    try:
        meta = orjson.loads(read_regular(store.path)[0])["_meta"]["1"]
        ref, store_id = meta["manifest"], meta["storeId"]
    except (OSError, ValueError, KeyError, TypeError):
        return None  # no live file of schema 3 that names a manifest: nothing to rebuild
    if not isinstance(ref, dict) or store._shape_problem({"_meta": {"1": meta}}) is not None:
        return None
    try:
        store.read_manifest(ref, store_id)
        return None
    except ManifestProblem:
        pass
    entries = []
    for n in range(1, ref["count"] + 1):
        name = f"seg-{store_id}-{n:06d}.json"
        try:
            entries.append({"name": name, "bytes": os.stat(store.segment_dir / name).st_size})
        except OSError as exc:
            raise HandoffError(
                "store_corrupt",
                f"The segment manifest {ref['name']} cannot be rebuilt: the sealed segment "
                f"{name} cannot be read ({exc.strerror}). Restore the segments folder from a "
                "backup, then run repair again.",
                reason="manifest_unrebuildable",
            ) from None
    # The format the last seal wrote: 2 (sizes only), or 1 for a store sealed before.
    blobs = [manifest_blob(store_id, entries, fmt) for fmt in (2, 1)]
    blob = next(
        (b for b in blobs if len(b) == ref["bytes"] and zlib.crc32(b) == ref["crc32"]), None
    )
    if blob is None:
        raise HandoffError(
            "store_corrupt",
            f"The segment manifest {ref['name']} cannot be rebuilt: the sealed segments on "
            f"disk are not the ones {store.path} recorded (their sizes differ). Restore the "
            "segments folder from a backup, then run repair again.",
            reason="manifest_unrebuildable",
        )
    atomic_write(store.segment_dir / ref["name"], blob)
    return f"rebuilt the segment manifest {ref['name']} from its {len(entries)} sealed segments"


def _top_seq(tables: dict[str, dict[str, Any]]) -> int:
    seqs = [
        r["seq"]
        for t in tables.values()
        for r in t.values()
        if isinstance(r, dict) and type(r.get("seq")) is int
    ]
    return max(seqs, default=0)


def _restore_state_file(store: StateStore, restore: str | os.PathLike[str], exists: bool) -> str:
    """Put a missing state file back from ``restore``; refuses to replace one."""
    if exists:
        raise HandoffError(
            "invalid_params",
            f"{store.path} exists; --restore only puts back a missing state file. "
            "Move it away first if it is the one to replace.",
        )
    try:
        raw, _ = read_regular(Path(restore))
        data = orjson.loads(raw)
    except (OSError, orjson.JSONDecodeError) as exc:
        raise HandoffError(
            "invalid_params", f"{restore} is not a readable state file ({exc})."
        ) from None
    shape = store._shape_problem(data)
    if shape is not None:
        raise HandoffError("invalid_params", f"{restore} is not a state file: {shape}.")
    atomic_write(store.path, raw)
    return f"restored {store.path} from {restore}"


def _start_fresh(store: StateStore, fresh: bool) -> str:
    """Start over on a lost store: its files move into ``lost-<time>/``; needs ``fresh``."""
    if not fresh:
        raise HandoffError(
            "store_corrupt",
            f"The state file {store.path} is missing and the store existed; repair "
            "needs --restore FILE (put a state file back) or --fresh (start over).",
            reason="state_missing",
        )
    lost = store.folder / f"lost-{time.strftime('%Y%m%dT%H%M%S')}"
    lost.mkdir()
    for path in [
        store.marker_path,
        store.segment_dir,
        store.journal_path,
        *store.folder.glob(f"{STATE_FILE}.corrupt-*"),
    ]:
        if os.path.lexists(path):
            os.replace(path, lost / path.name)
    return f"started a fresh store; the lost store's files are in {lost}"


def _repair_seq_and_marker(
    store: StateStore, report: dict[str, Any], actions: list[str]
) -> dict[str, Any]:
    """Raise a rewound ``nextSeq`` and write a missing marker; returns the new check."""
    marker_missing = bool(report["storeId"]) and store.read_marker() is None
    if any(p["problem"] == "next_seq_behind" for p in report["problems"]) or marker_missing:
        store._marker_ok = False
        with store.transaction() as tx:
            full = store.assemble(tx.data)
            meta = tx.data["_meta"]["1"]
            top = _top_seq({name: full.get(name) or {} for name in SEALED_TABLES})
            if meta["nextSeq"] <= top:
                actions.append(f"raised nextSeq from {meta['nextSeq']} to {top + 1}")
                meta["nextSeq"] = top + 1
            tx.storage.dirty = True  # the write also writes a missing marker
        if marker_missing and store.read_marker() is not None:
            actions.append("wrote the missing store marker")
        report = check_store(store)
    return report


def repair_store(
    store: StateStore, *, restore: str | os.PathLike[str] | None = None, fresh: bool = False
) -> dict[str, Any]:
    """The explicit repairs: put a state file back (``restore``), start over on purpose
    (``fresh``: what the lost store left is moved into ``lost-<time>/``, nothing is
    deleted), rebuild a missing or damaged segment manifest from the segments, raise a
    rewound ``nextSeq``, write a missing marker."""
    if restore is not None and fresh:
        raise HandoffError("invalid_params", "Give --restore FILE or --fresh, not both.")
    actions: list[str] = []
    store.ensure_folder()
    with store.writer._locked():
        exists = os.path.lexists(store.path)
        if restore is not None:
            actions.append(_restore_state_file(store, restore, exists))
        elif not exists and store.lost_signs():
            actions.append(_start_fresh(store, fresh))
        rebuilt = _rebuild_manifest(store)
        if rebuilt:
            actions.append(rebuilt)
    store._live_key = store._live = None
    report = _repair_seq_and_marker(store, check_store(store), actions)
    return {"repaired": bool(actions), "actions": actions, "check": report}
