"""The audit log: one JSON object per line, each numbered (`seq`, 1-based), tagged with its
chain's id and linked to the one before by hash, with a checkpoint beside it
(`audit.jsonl.checkpoint`: the record count and the head hash).

An append takes an exclusive fcntl lock on the log, reads the checkpoint and the tail,
announces the record in the checkpoint (its hash, offset and length), writes the line with a
single O_APPEND write and confirms the checkpoint (each checkpoint write one write, in place)
before the lock is released, so concurrent hook processes keep one chain and a checkpoint that
matches it; readers take the same lock, shared. A writer stopped at any instant (SIGKILL)
leaves a log the next append and `audit verify` accept without a key: the record past the
checkpoint is the one it announced, and part of that record (a write cut short between
pages) is cut off by the next append. A long-running process (the service) skips the reads
when both files are exactly as its own last append left them. With AGENT_GATEWAY_AUDIT_KEY_FILE
set, records and checkpoints carry a MAC. Records reach the OS (page cache) before the caller
answers; there is no fsync per record.

When an append finds the log and its checkpoint disagreeing (cut, emptied, edited, or the
checkpoint deleted, forged or rolled back), it still records the decision, and the next
checkpoint carries an alarm saying what was found, which every later checkpoint keeps: the
damage stays visible to `audit verify` however many appends follow.
"""

from __future__ import annotations

import contextlib
import fcntl
import functools
import hashlib
import json
import os
from collections.abc import Callable, Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import NamedTuple, cast

from gateway.archive.redact import Redactor
from gateway.audit.record import AuditRecord, decision_record, encodable
from gateway.env import gateway_home
from gateway.hashchain import GENESIS, HASH_KEY, PREV_KEY, record_hash
from gateway.integrity.checkpoint import (
    Alarm,
    Stored,
    announced,
    announces,
    checkpoint_line,
    checkpoint_problem,
    counted,
    make_alarm,
    number,
)
from gateway.integrity.keys import FROM_ENV, KeyChoice, KeySet, resolve_keys, sealed_line
from gateway.types import JSON, Decision, JSONObject, ToolCall

_TAIL_CHUNK = 4096
_PAD_LIMIT = 64 * 1024
"""A checkpoint is well under 1 KiB; a bigger file is never padded to."""
CHECKPOINT_SUFFIX = ".checkpoint"
SEQ = "seq"
CHAIN = "chain"


def audit_path() -> Path:
    return _audit_path(gateway_home())


@functools.lru_cache(maxsize=16)
def _audit_path(home: Path) -> Path:
    return home / "audit.jsonl"


@functools.lru_cache(maxsize=64)
def checkpoint_path(log: Path) -> Path:
    # Cached: the service derives it once per decision, and path arithmetic is not free.
    return log.with_name(log.name + CHECKPOINT_SUFFIX)


def append_decision(
    call: ToolCall,
    decision: Decision,
    path: Path | None = None,
    *,
    redactor: Redactor | None = None,
    keys: KeyChoice = FROM_ENV,
    extra: Mapping[str, str] | None = None,
) -> AuditRecord:
    """Record one decision; returns the record as written (with `seq`, `hash`, `mac`).
    `extra` adds fields (the service: the caller's tenant)."""
    record = decision_record(call, decision, redactor=redactor)
    return append_record({**record, **extra} if extra else record, path, keys=keys)


def append_record(
    record: Mapping[str, object], path: Path | None = None, *, keys: KeyChoice = FROM_ENV
) -> AuditRecord:
    """Number `record`, link it to the last one in the log, append it and move the checkpoint."""
    key_set = resolve_keys(keys)  # a bad key file fails before anything is written
    target = path or audit_path()
    fd = _open_log(target)
    key = str(target)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        now = datetime.now(UTC).isoformat(timespec="microseconds")
        cp_file = checkpoint_path(target)
        state, alarm = _where_the_chain_stands(fd, cp_file, key, key_set, now)
        numbered = {**record, CHAIN: state.chain, SEQ: state.records + 1}
        try:
            linked, body = sealed_line(numbered, state.head, key_set)
        except UnicodeEncodeError:  # a lone surrogate from the input: kept as U+FFFD
            linked, body = sealed_line(cast(JSONObject, encodable(cast(JSON, numbered))),
                                       state.head, key_set)
        head = str(linked[HASH_KEY])
        checkpoint = _append_announced(fd, target, cp_file, body, head, state, now, key_set,
                                       alarm)
        _STATE[key] = _Tail(
            log=_identity(os.fstat(fd)),
            checkpoint_file=_file_identity(cp_file),
            head=head,
            records=state.records + 1,
            chain=state.chain,
            checkpoint=checkpoint,
        )
        return cast(AuditRecord, linked)
    except BaseException:
        _STATE.pop(key, None)  # never trust the cache for this file after a failure
        raise
    finally:
        os.close(fd)  # closing releases the lock


def _open_log(target: Path) -> int:
    try:
        return os.open(target, os.O_RDWR | os.O_CREAT | os.O_APPEND, 0o600)
    except FileNotFoundError:  # first record, or the directory was removed: create it
        target.parent.mkdir(parents=True, exist_ok=True)
        return os.open(target, os.O_RDWR | os.O_CREAT | os.O_APPEND, 0o600)


def _where_the_chain_stands(
    fd: int, cp_file: Path, key: str, keys: KeySet | None, now: str
) -> tuple[_Tail, Alarm | None]:
    """The chain as this process left it when both files are as it left them (the head and
    count are the ones it wrote); any other writer changes the log's size and the
    checkpoint's inode, so then both are read again."""
    known = _STATE.get(key)
    if (
        known is not None
        and known.log == _identity(os.fstat(fd))
        and known.checkpoint_file == _file_identity(cp_file)
    ):
        return known, None
    return _survey(fd, cp_file, keys, known, now)


def _append_announced(
    fd: int, target: Path, cp_file: Path, body: bytes, head: str, state: _Tail, now: str,
    keys: KeySet | None, alarm: Alarm | None,
) -> Stored:
    """Announced, written, confirmed: a writer stopped between any two leaves a log the next
    one can tell from a record added behind its back. Returns the confirming checkpoint."""
    line = body + b"\n"
    size = os.fstat(fd).st_size
    if size and os.pread(fd, 1, size - 1) != b"\n":
        line = b"\n" + line  # a fragment left by another writer: start on a clean line
    intent, intent_bytes = checkpoint_line(
        chain=state.chain,
        count=state.records,
        head=state.head,
        time=now,
        previous=state.checkpoint,
        keys=keys,
        alarm=alarm,
        announce={"hash": head, "at": size, "bytes": len(line)},
    )
    _write_checkpoint(cp_file, intent_bytes + b"\n")
    _write_whole(fd, line, size, target)
    checkpoint, checkpoint_bytes = checkpoint_line(
        chain=state.chain,
        count=state.records + 1,
        head=head,
        time=now,
        previous=intent,
        keys=keys,
        confirms=True,
    )
    _write_checkpoint(cp_file, checkpoint_bytes + b"\n")
    return checkpoint


def _write_whole(fd: int, line: bytes, size: int, target: Path) -> None:
    """Append `line` whole or not at all: a short or failed write (a full disk) is cut back
    off, so the log stays a sequence of whole records and the next append starts clean."""
    try:
        written = os.write(fd, line)
        if written != len(line):
            raise OSError(f"short write to {target}: {written} of {len(line)} bytes")
    except BaseException:
        with contextlib.suppress(OSError):  # else the next append starts on a new line
            os.ftruncate(fd, size)
        raise


_Identity = tuple[int, int, int, int]


class _Tail(NamedTuple):
    """Where a chain stands: its files' identities, head hash, count, id, checkpoint."""

    log: _Identity | None
    checkpoint_file: _Identity | None
    head: str
    records: int
    chain: str
    checkpoint: Stored | None


_STATE: dict[str, _Tail] = {}
"""Per audit file: the chain as this process's last append left it."""


def _identity(st: os.stat_result) -> _Identity:
    return (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns)


def _file_identity(path: Path) -> _Identity | None:
    try:
        return _identity(os.stat(path))
    except FileNotFoundError:
        return None


def _survey(
    fd: int, cp_file: Path, keys: KeySet | None, known: _Tail | None, now: str
) -> tuple[_Tail, Alarm | None]:
    """Read the log's tail and the checkpoint: where the chain stands, and any alarm."""
    checkpoint = read_checkpoint(cp_file)
    problem = checkpoint_problem(checkpoint, keys) if checkpoint is not None else None
    if checkpoint is not None and problem is None:
        cut = interrupted_append(checkpoint, os.fstat(fd).st_size,
                                 lambda at, n: os.pread(fd, n, at))
        if cut is not None:  # part of the record a stopped writer announced: never answered
            os.ftruncate(fd, cut)
    last = _last_line(fd)
    tail = _parse(last)
    if not last.strip():
        head = GENESIS
    elif tail is not None and isinstance(tail.get(HASH_KEY), str):
        head = str(tail[HASH_KEY])
    else:
        # A damaged last line: link to its bytes so verify reports the damage, not this record.
        head = hashlib.sha256(last).hexdigest()
    chain = str((tail or {}).get(CHAIN) or (checkpoint or {}).get(CHAIN) or os.urandom(8).hex())
    alarm: Alarm | None = None
    if checkpoint is None:
        count = 0 if not last.strip() else _count_lines(fd)
        if tail is not None and SEQ in tail:  # written by a gateway that kept a checkpoint
            alarm = make_alarm(count, "the checkpoint was missing (deleted?) when the next "
                               "record was appended", now)
        return _Tail(None, None, head, count, chain, None), alarm
    if problem is not None:
        count = _count_lines(fd)
        alarm = make_alarm(max(1, count), f"the checkpoint could not be trusted: {problem}", now)
        return _Tail(None, None, head, count, chain, None), alarm

    expected = counted(checkpoint)
    seq = (tail or {}).get(SEQ, expected) if expected else 0
    if checkpoint.get("head") == head and seq == expected:
        count = expected
        if known is not None and known.checkpoint is not None and known.chain == chain:
            mine = number(known.checkpoint)
            if number(checkpoint) < mine:
                alarm = make_alarm(
                    count + 1,
                    f"checkpoint #{checkpoint['seq']} found where this writer had written "
                    f"#{mine}: an older checkpoint was put back (records after "
                    f"{count} removed)",
                    now,
                )
    elif _announced_tail(tail, checkpoint) or _finished_by_key_holder(tail, checkpoint, keys):
        count = expected + 1  # a writer stopped between its record and its checkpoint
    else:
        count = _count_lines(fd)
        at = min(count, expected) + 1 if count != expected else max(1, expected)
        alarm = make_alarm(
            at,
            f"the log held {count} records where checkpoint #{checkpoint['seq']} counted "
            f"{expected} (cut, emptied, edited or added to behind the gateway's back)",
            now,
        )
    return _Tail(None, None, head, count, chain, checkpoint), alarm


def _announced_tail(tail: Mapping[str, JSON] | None, checkpoint: Mapping[str, JSON]) -> bool:
    """One record past the checkpoint, linked to its head: the very record the checkpoint
    announced (its hash, recomputed) before a writer was stopped short of confirming it."""
    return (
        tail is not None
        and tail.get(PREV_KEY) == checkpoint.get("head")
        and tail.get(SEQ) == counted(checkpoint) + 1
        and announces(checkpoint, record_hash(tail))
        and tail.get(HASH_KEY) == record_hash(tail)
    )


def interrupted_append(checkpoint: Stored, size: int, read: Callable[[int, int], bytes]
                       ) -> int | None:
    """Where to cut a log of `size` bytes back to when it ends in part of the record the
    checkpoint announced (a writer stopped mid-write: a write is cut short between pages),
    or None. `read(at, n)` reads the log. Only a tail shorter than the announced line and
    holding no line of its own is cut, so never a record."""
    intent = announced(checkpoint)
    if intent is None or not intent["at"] < size < intent["at"] + intent["bytes"]:
        return None
    fragment = read(intent["at"], size - intent["at"])
    return None if b"\n" in fragment.removeprefix(b"\n") else intent["at"]


def _finished_by_key_holder(
    tail: Mapping[str, JSON] | None, checkpoint: Mapping[str, JSON], keys: KeySet | None
) -> bool:
    """One record past the checkpoint, linked to its head and sealed with a known key: only a
    key holder wrote it, and it was stopped before moving the checkpoint."""
    return (
        keys is not None
        and tail is not None
        and tail.get(PREV_KEY) == checkpoint.get("head")
        and tail.get(SEQ) == counted(checkpoint) + 1
        and keys.check(tail) is None
    )


def read_checkpoint(path: Path) -> JSONObject | None:
    """The checkpoint beside a log; None when there is none, {} when it is unreadable."""
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return None
    except OSError:
        return {}
    value = _parse(data)
    return value if value is not None else {}


def _write_checkpoint(path: Path, data: bytes) -> None:
    """Rewrite the checkpoint with one write, in place, under the log's lock (which every
    reader, appender or `verify`, takes). Shorter content is padded with spaces (JSON allows
    them) so no truncation is ever visible. A temp file and rename would cost ~240 us per
    decision on ext4, which flushes a file renamed over another."""
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        size = os.fstat(fd).st_size
        if size > _PAD_LIMIT:  # not one this gateway wrote: start it over (still under lock)
            os.ftruncate(fd, 0)
        elif len(data) < size:
            data = data[:-1] + b" " * (size - len(data)) + b"\n"
        if os.pwrite(fd, data, 0) != len(data):
            raise OSError(f"short write to {path}")
    finally:
        os.close(fd)


def _parse(line: bytes) -> JSONObject | None:
    try:
        value = json.loads(line)
    except ValueError:
        return None
    return value if isinstance(value, dict) else None


def _count_lines(fd: int) -> int:
    """Records in the log (a last line without its newline counts): read only when the
    checkpoint cannot say, i.e. on a first append or after damage."""
    count, pos, last = 0, 0, b"\n"
    while chunk := os.pread(fd, 1 << 20, pos):
        count += chunk.count(b"\n")
        pos += len(chunk)
        last = chunk[-1:]
    return count + (0 if last == b"\n" else 1)


def _last_line(fd: int) -> bytes:
    end = os.lseek(fd, 0, os.SEEK_END)
    pos, tail = end, b""
    while pos > 0:
        step = min(_TAIL_CHUNK, pos)
        pos -= step
        tail = os.pread(fd, step, pos) + tail
        body = tail.rstrip(b"\n")
        cut = body.rfind(b"\n")
        if cut >= 0:
            return body[cut + 1 :]
    return tail.rstrip(b"\n")
