"""Bad hook bodies behind serve: each is a clear 4xx carrying a deny, with its audit record;
ids are kept exactly or refused, never altered; JSON that is not JSON (NaN) is refused."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from tests.server.conftest import AppFactory


def _records() -> list[dict[str, Any]]:
    log = Path(os.environ["AGENT_GATEWAY_HOME"]) / "audit.jsonl"
    if not log.exists():
        return []
    return [json.loads(line) for line in log.read_text().splitlines() if line.startswith("{")]


BASE = {"hook_event_name": "PreToolUse", "session_id": "s-1", "tool_use_id": "tu-1",
        "tool_name": "Bash", "tool_input": {"command": "ls"}, "cwd": "/tmp"}


@pytest.mark.parametrize("change", [
    {"tool_input": "ls -la"},
    {"tool_name": ["Bash"]},
    {"tool_use_id": {"id": 1}},
    {"session_id": 7},
])
async def test_a_body_of_wrong_types_is_a_4xx_deny_with_its_record(
    make_client: AppFactory, policy_file: Path, change: dict[str, Any]
) -> None:
    client, _ = await make_client()
    before = len(_records())
    resp = await client.post("/hooks/PreToolUse", json={**BASE, **change})
    body = await resp.json()
    assert 400 <= resp.status < 500, (resp.status, body)
    assert body["hookSpecificOutput"]["permissionDecision"] == "deny"
    assert body["error"]
    records = _records()[before:]
    assert len(records) == 1 and records[0]["decision"] == "deny", records


@pytest.mark.parametrize("raw", [
    b'{"hook_event_name": "PreToolUse", "session_id": "s-1", "tool_use_id": "tu-\\udc80",'
    b' "tool_name": "Bash", "tool_input": {"command": "ls"}, "cwd": "/tmp"}',
    b'{"hook_event_name": "PreToolUse", "session_id": "s-1", "tool_use_id": "tu-1",'
    b' "tool_name": "Bash", "tool_input": {"command": "ls", "timeout": NaN}, "cwd": "/tmp"}',
])
async def test_text_that_cannot_be_kept_exactly_is_refused(
    make_client: AppFactory, policy_file: Path, raw: bytes
) -> None:
    client, _ = await make_client()
    before = len(_records())
    resp = await client.post("/hooks/PreToolUse", data=raw,
                             headers={"Content-Type": "application/json"})
    body = await resp.json()
    assert resp.status == 400, (resp.status, body)
    assert body["hookSpecificOutput"]["permissionDecision"] == "deny"
    (record,) = _records()[before:]  # the refusal, on record; nothing altered or bare NaN
    assert record["decision"] == "deny" and record["rule_id"] == "gateway.fail-closed"
    assert "\ufffd" not in json.dumps(record, ensure_ascii=False)
    log = Path(os.environ["AGENT_GATEWAY_HOME"]) / "audit.jsonl"
    for line in log.read_text().splitlines():
        json.loads(line, parse_constant=_refuse)


def _refuse(constant: str) -> Any:
    raise AssertionError(f"{constant} on record")
