"""Named points inside the writes where a test can stop the process.

The crash tests kill a writer in the middle of an operation. Killing after a random
delay only lands mid-operation when the machine happens to be quick enough, so
instead the writer stops itself at a point the test names, and the test then sends
SIGKILL to the stopped process: the kill lands exactly there whatever the load.

``HANDOFF_TEST_PAUSE_AT=POINT[#N][,POINT[#N]…]`` stops the process at the ``N``-th
time (default the first) it reaches ``POINT``. Before stopping it writes
``<pid> <point>\\n`` to the file descriptor ``HANDOFF_TEST_PAUSE_FD`` when that is
set, so the test knows without polling; then it sends itself SIGSTOP. The variable is
read on every call, so a fork server may set it per child (and call :func:`reset`).
Unset (always, outside tests), :func:`pause_point` is one dictionary lookup
(:func:`environ_get`).

The points, in the order a transaction reaches them (see ``store.py``):

``tx.locked``        the state lock is held, nothing read yet
``tx.applied``       the operation changed the in-memory snapshot, nothing written
``journal.written``  the change is appended to the journal, not yet fsync'd: it is in
                     the file (a killed process loses nothing; a power cut may)
``journal.synced``   that line is fsync'd: the operation has happened (a transaction
                     that appends reaches no ``seal.*``, ``segment.*`` or ``state.*``)
``seal.begin``       a seal starts (the live file outgrew the seal size)
``segment.synced``   a segment's temporary file is written and fsync'd, not renamed
``segment.renamed``  that segment is in place (not yet listed by any manifest)
``directory.synced`` the directory of a group of segments this seal completed is
                     written and fsync'd, not renamed
``directory.renamed`` that directory is in place (its last segments not yet listed)
``manifest.synced``  the seal's new segment manifest is written and fsync'd, not renamed
``manifest.renamed`` that manifest is in place; the live file still names the old one
``seal.written``     every new segment is on disk; the live file still lists none
``state.synced``     the live file's temporary file is written and fsync'd, not renamed
``state.renamed``    the new live file is in place: the operation has happened
``tx.written``       everything is written; the lock is still held

on the read side, ``read.missing`` (a read found no live file, the signs of a lost
store not looked at yet: where a lock-free reader met the first write of a new store,
``tests/store/test_reader_race.py``; a new store's first transaction passes it too) and
``check.missing`` (the same moment in ``handoff store check``),
and in ``handoff.generate`` / ``handoff.startSession``: ``generation.document`` (the
document and the draft are saved, no record yet), ``generation.session`` (the started
text and the new pi session file are written, no start record yet),
``newfile.synced`` (a new file's temporary copy is written, not linked).
"""

from __future__ import annotations

import os
import signal

from . import environ_get

ENV = "HANDOFF_TEST_PAUSE_AT"
FD_ENV = "HANDOFF_TEST_PAUSE_FD"

#: Every point, in the order a sealing transaction reaches them.
STORE_POINTS = (
    "tx.locked",
    "tx.applied",
    "journal.written",
    "journal.synced",
    "seal.begin",
    "seal.marked",
    "segment.synced",
    "segment.renamed",
    "directory.synced",
    "directory.renamed",
    "manifest.synced",
    "manifest.renamed",
    "seal.written",
    "state.synced",
    "state.renamed",
    "tx.written",
)
#: The points after which an operation has happened for any reader (the live file was
#: replaced, or the journal line written: a killed process's write is in the file).
AFTER_COMMIT = ("journal.written", "journal.synced", "state.renamed", "tx.written")
#: The points of a transaction that writes the live file whole, and of one that appends.
WHOLE_POINTS = ("state.synced", "state.renamed")
JOURNAL_POINTS = ("journal.written", "journal.synced")
GENERATION_POINTS = ("generation.document", "generation.session", "newfile.synced")

_hits: dict[str, int] = {}
_parsed: tuple[str, dict[str, int]] = ("", {})


def reset() -> None:
    """Forget the points reached so far (a forked child counts from zero)."""
    _hits.clear()


def _wanted() -> dict[str, int]:
    global _parsed
    spec = os.environ.get(ENV, "")
    if spec != _parsed[0]:
        wanted: dict[str, int] = {}
        for part in filter(None, (p.strip() for p in spec.split(","))):
            name, _, n = part.partition("#")
            wanted[name] = int(n) if n.isdigit() and int(n) > 0 else 1
        _parsed = (spec, wanted)
    return _parsed[1]


def pause_point(name: str) -> None:
    """Stop this process here if the test asked for it (see the module docstring)."""
    if environ_get(ENV) is None:
        return
    wanted = _wanted().get(name)
    if wanted is None:
        return
    _hits[name] = hit = _hits.get(name, 0) + 1
    if hit != wanted:
        return
    fd = os.environ.get(FD_ENV)
    if fd and fd.isdigit():
        os.write(int(fd), f"{os.getpid()} {name}\n".encode())
    stop = getattr(signal, "SIGSTOP", None)
    if stop is not None:
        os.kill(os.getpid(), stop)
