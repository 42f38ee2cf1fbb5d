"""Pure: verification of a store's ordered chain of manifests.

The chain index holds one entry per archive: a sequence number (0-based, as stored) and the
archive id. The manifests carry `prev_hash` and their 1-based position (`seq`), so editing,
deleting or reordering any archive breaks a link that `first_break` names, by position
("archive 3"), as an auditor counts.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from gateway.hashchain import GENESIS, HASH_KEY, PREV_KEY, record_hash
from gateway.integrity.keys import KeySet
from gateway.types import JSON

NOUN = "archive"


@dataclass(frozen=True, slots=True)
class ChainEntry:
    seq: int
    archive_id: str


@dataclass(frozen=True, slots=True)
class Break:
    """The first bad position (1-based), the archive there when known, and why."""

    position: int
    archive_id: str
    reason: str

    def __str__(self) -> str:
        where = f" ({self.archive_id[:16]})" if self.archive_id else ""
        return f"{NOUN} {self.position}{where}: {self.reason}"


def head_hash(entries: Sequence[ChainEntry]) -> str:
    """prev_hash for the next archive appended after these entries."""
    return entries[-1].archive_id if entries else GENESIS


def next_seq(entries: Sequence[ChainEntry]) -> int:
    return entries[-1].seq + 1 if entries else 0


def check_link(
    entry: ChainEntry,
    expected_seq: int,
    prev: str,
    manifest: Mapping[str, JSON] | None,
    keys: KeySet | None = None,
) -> Break | None:
    """One archive's link: contiguous sequence, manifest present, hash, prev_hash, position
    and (with keys) MAC right."""
    position = expected_seq + 1
    if entry.seq != expected_seq:
        return Break(position, "", "chain entry missing (archive deleted)")
    if manifest is None:
        return Break(position, entry.archive_id, "manifest missing")
    if manifest.get(HASH_KEY) != entry.archive_id:
        return Break(position, entry.archive_id, "manifest hash does not match the chain entry")
    if record_hash(manifest) != entry.archive_id:
        return Break(position, entry.archive_id, "manifest edited: hash does not match contents")
    if manifest.get(PREV_KEY) != prev:
        return Break(
            position,
            entry.archive_id,
            "prev_hash does not match the archive before it (deleted or reordered)",
        )
    if "seq" in manifest and manifest["seq"] != position:
        return Break(
            position,
            entry.archive_id,
            f"manifest numbered {manifest['seq']}: archives before it were removed or added",
        )
    if keys is not None:
        problem = keys.check(manifest)
        if problem is not None:
            return Break(position, entry.archive_id, problem)
    return None


def first_break(
    entries: Sequence[ChainEntry],
    manifests: Mapping[str, Mapping[str, JSON] | None],
    keys: KeySet | None = None,
) -> Break | None:
    """The first broken link of the whole chain, or None when it is intact."""
    prev = GENESIS
    for expected_seq, entry in enumerate(entries):
        broken = check_link(entry, expected_seq, prev, manifests.get(entry.archive_id), keys)
        if broken is not None:
            return broken
        prev = entry.archive_id
    return None
