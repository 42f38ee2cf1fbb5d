"""Verifying an audit log: its chain, numbering and MACs record by record, then its checkpoint.

Reports the first bad position (1-based, "record 12: ...") and notes on what was not checked.
"""

from __future__ import annotations

import fcntl
import json
import os
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import BinaryIO, NamedTuple

from gateway.audit.log import (
    CHAIN,
    SEQ,
    audit_path,
    checkpoint_path,
    interrupted_append,
    read_checkpoint,
)
from gateway.hashchain import GENESIS, HASH_KEY, MAC_KEY, link_problem
from gateway.integrity.checkpoint import Finding, checkpoint_finding
from gateway.integrity.keys import FROM_ENV, KeyChoice, KeySet, resolve_keys
from gateway.types import JSON, JSONObject

NOUN = "record"


@dataclass(frozen=True)
class LogReport:
    path: Path
    records: Sequence[Mapping[str, JSON]] = field(repr=False)
    checkpoint: Mapping[str, JSON] | None
    finding: Finding | None
    notes: tuple[str, ...] = ()
    keys: KeySet | None = field(default=None, repr=False)

    @property
    def count(self) -> int:
        return len(self.records)

    @property
    def chain(self) -> str:
        for record in self.records:
            if record.get(CHAIN):
                return str(record[CHAIN])
        return str((self.checkpoint or {}).get(CHAIN) or "")


class LogRead(NamedTuple):
    records: list[JSONObject]
    """Every record up to the first line that is not a JSON object (as read: unverified)."""
    unreadable: Finding | None
    """That line, when there is one."""
    checkpoint: JSONObject | None
    """The checkpoint as it stood with the records; None when there is none."""
    interrupted: int = 0
    """Bytes left at the end by a writer stopped while writing the record its checkpoint
    announced (not read; the next append cuts them off)."""


def read_log(path: Path) -> LogRead:
    """The log's records (up to the first line that is not a JSON object, named as a finding)
    and its checkpoint, as they stood together: the lock is held (shared) only while the
    checkpoint is read and the log's length noted, and the records are read up to that length
    afterwards, so a long read never holds decisions up. A missing log is an empty one: a
    fresh home has no audit log yet."""
    try:
        with open(path, "rb") as handle:
            fcntl.flock(handle.fileno(), fcntl.LOCK_SH)
            try:
                size = os.fstat(handle.fileno()).st_size
                checkpoint = read_checkpoint(checkpoint_path(path))
                fd = handle.fileno()
                cut = interrupted_append(checkpoint, size, lambda at, n: os.pread(fd, n, at)
                                         ) if checkpoint else None
            finally:
                fcntl.flock(handle.fileno(), fcntl.LOCK_UN)
            kept = size if cut is None else cut
            records, finding = _parse_lines(_lines_up_to(handle, kept))
            return LogRead(records, finding, checkpoint, size - kept)
    except FileNotFoundError:
        checkpoint = read_checkpoint(checkpoint_path(path))
        if checkpoint is not None and path.exists():  # created meanwhile: read it properly
            return read_log(path)
        return LogRead([], None, checkpoint)


def _lines_up_to(handle: BinaryIO, size: int) -> Iterator[bytes]:
    """The file's lines within its first `size` bytes (appends made since are not read)."""
    left = size
    for line in handle:
        if left <= 0:
            return
        yield line[:left]
        left -= len(line)


def _parse_lines(lines: Iterable[bytes]) -> tuple[list[JSONObject], Finding | None]:
    records: list[JSONObject] = []
    for position, line in enumerate(lines, start=1):
        try:
            record = json.loads(line)
        except ValueError:
            return records, Finding(position, f"{NOUN} {position}: not valid JSON")
        if not isinstance(record, dict):
            return records, Finding(position, f"{NOUN} {position}: not a JSON object")
        records.append(record)
    return records, None


def chain_finding(
    records: Sequence[Mapping[str, JSON]], keys: KeySet | None, *, start: int = 1
) -> Finding | None:
    """The first record whose link, number, chain id or MAC is wrong."""
    prev = GENESIS
    chain = ""
    for position, record in enumerate(records, start=start):
        problem = link_problem(record, prev)
        if problem is None and SEQ in record and record[SEQ] != position:
            problem = (
                f"numbered {record[SEQ]}: records before it were removed or added"
            )
        if problem is None and record.get(CHAIN):
            chain = chain or str(record[CHAIN])
            if record[CHAIN] != chain:
                problem = f"belongs to another chain ({record[CHAIN]}, not {chain})"
        if problem is None and keys is not None:
            problem = keys.check(record)
        if problem is not None:
            return Finding(position, f"{NOUN} {position}: {problem}")
        prev = str(record[HASH_KEY])
    return None


def verify_log(path: Path | str | None = None, *, keys: KeyChoice = FROM_ENV) -> LogReport:
    """Everything `audit verify` checks locally. Raises ConfigError for a bad key file."""
    target = Path(path) if path else audit_path()
    key_set = resolve_keys(keys)
    records, unreadable, checkpoint, interrupted = read_log(target)
    notes: list[str] = []
    if interrupted:
        notes.append(f"an append was interrupted after record {len(records)} (the writer was "
                      f"stopped): its {interrupted} bytes are not a record and the next append "
                      "cuts them off")
    findings = [f for f in (unreadable, chain_finding(records, key_set)) if f is not None]
    if unreadable is None:
        legacy = checkpoint is None and records and SEQ not in records[-1]
        if legacy:
            notes.append("no checkpoint: written by a gateway before checkpoints; the end of "
                         "the log is not anchored until the next append")
        else:
            cp = checkpoint_finding(
                checkpoint, len(records), lambda n: _hash_at(records, n), key_set, NOUN
            )
            if cp is not None:
                findings.append(cp)
    if key_set is None and any(MAC_KEY in r for r in records):
        notes.append("MACs not checked: no key (set AGENT_GATEWAY_AUDIT_KEY_FILE)")
    first = min(findings, key=lambda f: f.position) if findings else None
    return LogReport(target, records, checkpoint, first, tuple(notes), key_set)


def verify(path: Path | str | None = None, *, keys: KeyChoice = FROM_ENV
           ) -> tuple[int, str] | None:
    """The first bad position and its description, or None when the log holds."""
    finding = verify_log(path, keys=keys).finding
    return (finding.position, finding.message) if finding is not None else None


def _hash_at(records: Sequence[Mapping[str, JSON]], position: int) -> str | None:
    if 1 <= position <= len(records):
        return str(records[position - 1].get(HASH_KEY))
    return None
