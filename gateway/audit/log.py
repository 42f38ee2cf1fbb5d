"""The audit log: one JSON object per line, each linked to the one before by hash.

Appends take an exclusive fcntl lock, read only the tail of the file for the previous hash,
and write the line with a single O_APPEND write, so concurrent hook processes keep one chain.
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
    }


def append_decision(call: ToolCall, decision: Decision, path: Path | None = None
                    ) -> dict[str, Any]:
    return append_record(decision_record(call, decision), path)


def append_record(record: Mapping[str, Any], path: Path | None = None) -> dict[str, Any]:
    """Link `record` to the last one in the log and append it; returns the linked record."""
    target = path or audit_path()
    target.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(target, os.O_RDWR | os.O_CREAT | os.O_APPEND, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        linked = link(record, _last_hash(fd))
        line = json.dumps(linked, sort_keys=True, ensure_ascii=False) + "\n"
        os.write(fd, line.encode())
        return linked
    finally:
        os.close(fd)  # closing releases the lock


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
