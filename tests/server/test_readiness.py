"""Readiness that fits replicas: a bad reload keeps the last good policy in force and the
replica ready; only a store that cannot be written makes it not ready."""

from __future__ import annotations

import asyncio
import logging
import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.server.conftest import AppFactory
from tests.server.test_app import decision_of, pre_tool_use


async def test_readyz_when_all_is_well(make_client: AppFactory) -> None:
    client, _ = await make_client()
    resp = await client.get("/readyz")
    assert resp.status == 200
    assert await resp.json() == {"ready": True, "problems": [], "warnings": []}


@pytest.mark.parametrize(("broken", "line"), [
    ("version: 1\nname: [broken\n", 2),
    # valid YAML, but the rule would do nothing: `curl` would go through
    ("version: 1\npermissions:\n  deny: ['Bash(rm:*)', 'Bsh(curl:*)']\n", 3),
])
async def test_a_bad_reload_keeps_the_replica_ready_and_says_why(
    make_client: AppFactory, policy_file: Path, caplog: pytest.LogCaptureFixture, broken: str,
    line: int,
) -> None:
    client, _ = await make_client()
    caplog.set_level(logging.ERROR, logger="gateway.policy")
    policy_file.write_text(broken)
    # checked every 0.5 s, judged once it read the same twice 0.5 s apart
    resp, body = await _readyz_until(client, lambda body: bool(body["warnings"]))
    assert resp.status == 200 and body["ready"] is True and body["problems"] == []
    (warning,) = body["warnings"]
    assert "the last good policy stays in force" in warning and f"{policy_file}:{line}" in warning
    assert "policy reload failed" in caplog.text

    # ... and the last good policy is what decides
    denied = await client.post("/hooks/PreToolUse", json=pre_tool_use("rm -rf /tmp/x"))
    allowed = await client.post("/hooks/PreToolUse", json=pre_tool_use("echo hi", tool_use_id="2"))
    assert decision_of(await denied.json()) == "deny"
    assert decision_of(await allowed.json()) == "allow"

    if "Bsh" in broken:
        return  # (its fix reads as giving up the dead rule: the file's text had it)
    # fixed: the warning goes away
    policy_file.write_text("version: 1\nname: fixed\npermissions:\n  deny: ['Bash(rm:*)']\n")
    _, body = await _readyz_until(client, lambda body: not body["warnings"])
    assert body["warnings"] == [], "\n".join(body["warnings"])


async def _readyz_until(client: Any, done: Callable[[Any], bool], timeout: float = 5.0
                        ) -> tuple[Any, Any]:
    deadline = time.monotonic() + timeout
    while True:
        resp = await client.get("/readyz")
        body = await resp.json()
        if done(body) or time.monotonic() > deadline:
            return resp, body
        await asyncio.sleep(0.1)


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes through file permissions")
async def test_an_unwritable_audit_log_makes_the_replica_not_ready(
    make_client: AppFactory, policy_file: Path
) -> None:
    client, _ = await make_client()
    home = policy_file.parent / "gw-home"
    home.mkdir(exist_ok=True)
    home.chmod(0o500)
    try:
        resp = await client.get("/readyz")
        assert resp.status == 503
        assert any("audit log" in p for p in (await resp.json())["problems"])
    finally:
        home.chmod(0o700)


async def test_an_audit_log_that_cannot_exist_makes_the_replica_not_ready(
    make_client: AppFactory, policy_file: Path
) -> None:
    """The same check, in a form that holds for root too: the directory is a file."""
    client, _ = await make_client()
    home = policy_file.parent / "gw-home"
    home.write_text("not a directory")
    resp = await client.get("/readyz")
    assert resp.status == 503
    assert any("audit log directory" in p for p in (await resp.json())["problems"])
    # and a decision that cannot be recorded is not made
    denied = await client.post("/hooks/PreToolUse", json=pre_tool_use("echo hi"))
    assert decision_of(await denied.json()) == "deny"
    assert "audit log" in (await denied.json())["hookSpecificOutput"]["permissionDecisionReason"]


async def test_a_team_policy_that_does_not_load_is_a_warning_not_an_outage(
    make_client: AppFactory, tmp_path: Path
) -> None:
    from gateway.tenancy.tokens import Caller, TokenTable

    broken = tmp_path / "team-broken.yaml"
    broken.write_text("version: 1\npermissions:\n  deny:\n    - Bash(rm:*\n")
    tokens = TokenTable({"broken": Caller("team-broken", (str(broken),)), "ok": Caller("ok")})
    client, _ = await make_client(tokens=tokens)
    for _ in range(3):  # the workers try again at most every 0.5 s, and deny meanwhile
        denied = await client.post(
            "/hooks/PreToolUse", json=pre_tool_use("ls"), headers={"Authorization": "Bearer broken"}
        )
        assert decision_of(await denied.json()) == "deny"
    allowed = await client.post(
        "/hooks/PreToolUse", json=pre_tool_use("echo hi"), headers={"Authorization": "Bearer ok"}
    )
    assert decision_of(await allowed.json()) == "allow"
    # the team whose policy it is sees why; another team does not, nor does a probe
    resp = await client.get("/readyz", headers={"Authorization": "Bearer broken"})
    body = await resp.json()
    assert resp.status == 200 and body["ready"] is True
    (warning,) = body["warnings"]
    assert "does not load" in warning and f"{broken}:4:" in warning
    other = await client.get("/readyz", headers={"Authorization": "Bearer ok"})
    assert await other.json() == {"ready": True, "problems": [], "warnings": []}
    anonymous = await client.get("/readyz")
    assert anonymous.status == 200 and await anonymous.json() == {"ready": True}
