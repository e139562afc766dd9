"""The layout of ``.handoff/``: file names, schema and formats, the limits the store
keeps, the names of segments, directories and manifests, and the store's log."""

from __future__ import annotations

import os
import re
from typing import Any


class _Log:
    """``logging.getLogger`` of the package, imported at the first warning: a read-only
    process (a cold ``handoff call handoff.continue``) never imports logging."""

    def warning(self, *args: Any) -> None:
        import logging

        logging.getLogger(__package__).warning(*args)


log = _Log()


#: 3: the segment manifest in a file of its own, named by the live file, and the
#: journal beside the live file (2: the manifest inline in the live file; 1: one file
#: held everything). Older handoff versions refuse schema 3 as "written by a newer
#: handoff" and leave it untouched.
SCHEMA_VERSION = 3
SEGMENT_FORMAT = 1
#: The newest manifest file format (see ``StateStore.read_manifest``): 1 lists every
#: segment's name and size; 2 (written whenever the names are the store's numbers
#: 1..count, as every seal names them) lists the sizes only.
MANIFEST_FORMAT = 2
STATE_FILE = "state.json"
#: The live file's journal: changes appended (one fsync'd line each) since the live file
#: was last written whole (see ``apply_journal``).
JOURNAL_FILE = "state.journal"
#: Journal bytes a store keeps before a transaction writes the live file whole again.
DEFAULT_JOURNAL_BYTES = 32 * 1024
#: Keys of the live file's metadata a journal line may change; a change to any other
#: (the manifest, the store id, the schema) writes the live file whole.
JOURNAL_META_KEYS = frozenset({"nextSeq"})
LOCK_FILE = "state.lock"
SEGMENT_DIR = "segments"
#: The store's id, written beside the live file when the store is created: with it and
#: no live file the store was lost (moved aside, deleted), never new.
MARKER_FILE = "store-id"
DEFAULT_LOCK_TIMEOUT = 10.0
#: Seal the log tail once the live file is larger than this (bytes).
DEFAULT_SEAL_BYTES = 64 * 1024
#: How often a waiting writer retries the lock (seconds) where ``flock`` is missing
#: and the store falls back to ``filelock`` (see ``StateLock``).
LOCK_POLL_INTERVAL = 0.002
#: Parsed segment records kept for lookups (the full view keeps its own references).
RECORDS_CACHE_SEGMENTS = 32
#: Lookups a segment answers by a byte search of its raw index before it is parsed.
RAW_SCAN_LOOKUPS = 8
#: Sealed segments per directory of the first tier (see ``Directory``);
#: ``HANDOFF_DIRECTORY_SPAN`` for tests. Each further tier's directory covers
#: ``DIRECTORY_FANOUT`` of the tier below: 8, 64 and 512 segments, so a fresh process
#: reads at most ~7 files per tier plus 7 segments (12 at 800 segments, not ~50).
DEFAULT_DIRECTORY_SPAN = 8
DIRECTORY_FANOUT = 8
DIRECTORY_TIERS = 3
#: Directory formats read: 1 (one checksummed index line, read and checked whole) and
#: 2 (the index in checksummed key buckets, each read when a lookup needs it; written).
DIRECTORY_FORMAT = 2
DIRECTORY_FORMATS = (1, 2)
#: Keys per bucket of a format-2 directory's index (see ``Directory._bucket``).
DIRECTORY_BUCKET_KEYS = 256
#: Bytes read at a time while looking for the end of a segment's index line.
SEGMENT_HEAD_CHUNK = 16 * 1024
#: Bytes read at a time while looking for the end of a directory's header line.
DIRECTORY_HEAD_CHUNK = 64 * 1024
#: Keys a directory remembers the answer for (see ``Directory.segment_of``).
FOUND_KEYS_KEPT = 256
#: Reads of a store with segments (a new snapshot, or one reused by another command)
#: a process makes before it merges all segment indexes into one in-memory index (a
#: language server does; a single CLI command does not).
MERGE_AFTER_SNAPSHOTS = 4
#: Reads of the live file and journal a process without the lock makes before it takes
#: what it read (a writer folded the journal into a new live file in between).
LIVE_READ_TRIES = 8

TABLES = ("_meta", "sources", "revisions", "scopes", "generations")
#: Append-only tables whose records move into segments when sealed.
SEALED_TABLES = ("sources", "revisions", "generations")

#: The state folder's ``.gitignore``: the store is local working state, out of git as a
#: whole (docs/cli.md, "The store and git" says how to commit handoffs instead).
GITIGNORE = (
    "# written by handoff: the store is local working state, like .venv; to commit\n"
    '# handoffs, replace this file (docs/cli.md, "The store and git")\n*\n'
)
#: What handoff wrote before; replaced by ``GITIGNORE`` on the next write (a file the
#: user wrote is left alone).
OLD_GITIGNORES = (
    "# written by handoff: lock and temporary files stay out of git\nstate.lock\n*.tmp-*\n",
)

_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_NONBLOCK = getattr(os, "O_NONBLOCK", 0)

SEGMENT_NAME_RE = re.compile(r"^seg-([0-9a-f]{12})-([0-9]{6})\.json$")
#: A seal in progress (see ``StoreWriter._seal_marked``): the only writer of temp files
#: in the segments folder, so only its mark makes a transaction list that folder.
SEAL_MARK_PREFIX = ".seal-mark.tmp-"
DIRECTORY_NAME_RE = re.compile(r"^dir-([0-9a-f]{12})-([0-9]{6})-([0-9]{6})\.json$")
MANIFEST_NAME_RE = re.compile(r"^manifest-([0-9a-f]{12})-([0-9]{6})\.json$")
