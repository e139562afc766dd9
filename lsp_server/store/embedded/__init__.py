"""The state store: a small live TinyDB file plus sealed, immutable segments.

Layout of ``.handoff/`` (schema 3)::

    state.json       the live TinyDB file: ``_meta`` (schema, nextSeq, storeId, the
                     reference to the segment manifest: its file name, segment count,
                     size and CRC-32; document-id floors; the journal id), ``scopes``
                     (the heads), the unsealed tail of the log tables and any other table
    state.journal    changes since the live file was last written whole: one line per
                     transaction, ``<crc32> <json>``, applied in order when its journal
                     id is the live file's (see ``apply_journal``)
    segments/        sealed segments ``seg-<storeId>-<n>.json``, written once, never changed:
                     line 1 a header with the index of its records, line 2 the records;
                     the segment manifest ``manifest-<storeId>-<count>.json`` (the list of
                     segments with their sizes, written once by the seal that made it
                     current, checked whole against the live file's reference, removed
                     by the commit of the second seal after it); and a directory ``dir-<storeId>-<first>-<last>.json``
                     per whole group of 8, 64 and 512 segments (their merged index;
                     derived, checked, optional): line 1 a header, line 2 the index, in
                     format 2 as checksummed key buckets read one at a time (format 1,
                     one line checksummed whole, still reads; the next seal rewrites it)
    .seal-mark.tmp-* present only while a seal writes temp files in ``segments/``
    state.lock       the one cross-process lock (never deleted)

Every operation is one transaction: lock, read the live file and its journal, apply,
write once: a journal line appended and fsync'd when the change is records and the
sequence counter (most operations; the fsync is the commit point), else the live file
written whole (atomic replace, a new journal id, the journal emptied). When the log tail
grows past ``seal_bytes`` the transaction first seals it into segments and a new
manifest (each written atomically and fsync'd) and then writes the live file that
references that manifest; that rename is the commit point, so a crash leaves either the
old live file (the new segments and manifest are unreferenced and get swept) or the new
one. The live file does not grow with the history (the manifest is read and checked once
per process), so the cost of a write depends on the tail, not on the history. Schema-2
files (the manifest inline in the live file, no journal) read as they are and move the
manifest into its file on their first write; schema-1 files (one TinyDB file holding
everything) migrate forward on their first write.

The package is split by what each part owns. The read side, all a lookup needs:
``store`` (``StateStore``: the layout checked, the live file and its journal read, its
snapshots), ``snapshot`` (``History``), ``journal``, ``manifest``, ``segments``,
``dirindex`` (directory indexes), ``files`` and ``layout``. The write side (``writing``,
``StoreWriter`` and its parts ``lock``, ``transaction``, ``appending`` (journal
appends), ``seal`` and ``durable``) is loaded on the first write, and the whole log
(``history``: sealed tables folded in order, the full view, the merged index) on the
first full read or view, so a read-only process never compiles either.
"""

from .store import StateStore

__all__ = ["StateStore"]
