"""Pure: verification of a store's ordered chain of manifests.

The chain index holds one entry per archive: a sequence number and the archive id. The
manifests themselves carry `prev_hash`, so editing, deleting or reordering any archive breaks
a link that `first_break` names.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from gateway.hashchain import GENESIS, HASH_KEY, PREV_KEY, record_hash


@dataclass(frozen=True, slots=True)
class ChainEntry:
    seq: int
    archive_id: str


@dataclass(frozen=True, slots=True)
class Break:
    """The first broken link: which archive (by sequence number) and why."""

    seq: int
    archive_id: str
    reason: str

    def __str__(self) -> str:
        return f"archive #{self.seq} ({self.archive_id[:16]}): {self.reason}"


def head_hash(entries: Sequence[ChainEntry]) -> str:
    """prev_hash for the next archive appended after these entries."""
    return entries[-1].archive_id if entries else GENESIS


def next_seq(entries: Sequence[ChainEntry]) -> int:
    return entries[-1].seq + 1 if entries else 0


def check_link(
    entry: ChainEntry, expected_seq: int, prev: str, manifest: Mapping[str, Any] | None
) -> Break | None:
    """One archive's link: contiguous sequence, manifest present, hash and prev_hash right."""
    if entry.seq != expected_seq:
        missing = ChainEntry(expected_seq, "?" * 16)
        return Break(missing.seq, missing.archive_id, "chain entry missing (archive deleted)")
    if manifest is None:
        return Break(entry.seq, entry.archive_id, "manifest missing")
    if manifest.get(HASH_KEY) != entry.archive_id:
        return Break(entry.seq, entry.archive_id, "manifest hash does not match the chain entry")
    if record_hash(manifest) != entry.archive_id:
        return Break(entry.seq, entry.archive_id, "manifest edited: hash does not match contents")
    if manifest.get(PREV_KEY) != prev:
        return Break(
            entry.seq,
            entry.archive_id,
            "prev_hash does not match the archive before it (deleted or reordered)",
        )
    return None


def first_break(
    entries: Sequence[ChainEntry], manifests: Mapping[str, Mapping[str, Any] | None]
) -> Break | None:
    """The first broken link of the whole chain, or None when it is intact."""
    prev = GENESIS
    for expected_seq, entry in enumerate(entries):
        broken = check_link(entry, expected_seq, prev, manifests.get(entry.archive_id))
        if broken is not None:
            return broken
        prev = entry.archive_id
    return None
