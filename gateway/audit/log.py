"""The audit log: one JSON object per line, each linked to the one before by hash.

Appends take an exclusive fcntl lock, read only the tail of the file for the previous hash,
and write the line with a single O_APPEND write, so concurrent hook processes keep one chain.
A long-running process (the service) skips the tail read when the file is exactly as its own
last append left it. Records reach the OS (page cache) before the caller answers; there is no
fsync per record.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
from collections.abc import Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from gateway.hashchain import GENESIS, HASH_KEY, first_broken_link, link
from gateway.settings import gateway_home
from gateway.types import Decision, ToolCall

_TAIL_CHUNK = 4096


def audit_path() -> Path:
    return gateway_home() / "audit.jsonl"


def decision_record(call: ToolCall, decision: Decision, *, now: datetime | None = None
                    ) -> dict[str, Any]:
    return {
        "time": (now or datetime.now(UTC)).isoformat(timespec="microseconds"),
        "session_id": call.session_id,
        "prompt_id": call.prompt_id,
        "tool_use_id": call.tool_use_id,
        "agent_id": call.agent_id,
        "tool": call.tool_name,
        "decision": decision.kind,
        "would_deny": decision.would_deny,
        "rule_id": decision.rule_id,
        "reason": decision.reason,
        "policy": decision.policy_hash,
        **({} if decision.self_protection else {"self_protection": "off"}),
    }


def append_decision(call: ToolCall, decision: Decision, path: Path | None = None
                    ) -> dict[str, Any]:
    return append_record(decision_record(call, decision), path)


def append_record(record: Mapping[str, Any], path: Path | None = None) -> dict[str, Any]:
    """Link `record` to the last one in the log and append it; returns the linked record."""
    target = path or audit_path()
    try:
        fd = os.open(target, os.O_RDWR | os.O_CREAT | os.O_APPEND, 0o600)
    except FileNotFoundError:  # first record, or the directory was removed: create it
        target.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(target, os.O_RDWR | os.O_CREAT | os.O_APPEND, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        before = os.fstat(fd)
        key = str(target)
        known = _TAILS.get(key)
        # The file as this process left it (same inode, size and mtime): the last hash is
        # the one it wrote, so the tail need not be read again. Any other writer changes
        # the size, so the tail is read whenever someone else appended (or edited it).
        prev = known[1] if known is not None and known[0] == _identity(before) else None
        linked = link(record, prev if prev is not None else _last_hash(fd))
        line = (json.dumps(linked, sort_keys=True, ensure_ascii=False) + "\n").encode()
        written = os.write(fd, line)
        if written == len(line):
            _TAILS[key] = (_identity(os.fstat(fd)), str(linked[HASH_KEY]))
        else:  # a short write (disk full): never trust the cache for this file again
            _TAILS.pop(key, None)
            raise OSError(f"short write to {target}: {written} of {len(line)} bytes")
        return linked
    except BaseException:
        _TAILS.pop(str(target), None)
        raise
    finally:
        os.close(fd)  # closing releases the lock


_Identity = tuple[int, int, int, int]
_TAILS: dict[str, tuple[_Identity, str]] = {}
"""Per audit file: its identity right after this process's last append, and that hash."""


def _identity(st: os.stat_result) -> _Identity:
    return (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns)


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


def _last_hash(fd: int) -> str:
    last = _last_line(fd)
    if not last.strip():
        return GENESIS
    try:
        value = json.loads(last).get(HASH_KEY)
        if isinstance(value, str):
            return value
    except (ValueError, AttributeError):
        pass
    # A damaged last line: link to its bytes so verify reports the damage, not this record.
    return hashlib.sha256(last).hexdigest()


def verify(path: Path | str | None = None) -> tuple[int, str] | None:
    """The first broken link as (record index, description), or None when the chain holds."""
    records: list[dict[str, Any]] = []
    with open(path or audit_path(), encoding="utf-8") as handle:
        for index, line in enumerate(handle):
            try:
                record = json.loads(line)
            except ValueError:
                return index, f"record {index}: not valid JSON"
            if not isinstance(record, dict):
                return index, f"record {index}: not a JSON object"
            records.append(record)
    return first_broken_link(records)
