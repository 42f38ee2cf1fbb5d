"""The service app over real HTTP (aiohttp test server): hooks, auth, limits, readiness."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from gateway.server.app import MAX_HOOK_BODY, SERVICE
from gateway.tenancy.tokens import Caller, TokenTable
from tests.server.conftest import AppFactory


def pre_tool_use(command: str, session: str = "s-1", tool_use_id: str = "tu-1") -> dict[str, Any]:
    return {
        "hook_event_name": "PreToolUse",
        "session_id": session,
        "tool_name": "Bash",
        "tool_input": {"command": command},
        "tool_use_id": tool_use_id,
        "cwd": "/tmp",
        "transcript_path": "/nonexistent.jsonl",
    }


def decision_of(answer: dict[str, Any]) -> str | None:
    return (answer.get("hookSpecificOutput") or {}).get("permissionDecision")


async def test_pre_tool_use_denies_by_policy_and_audits(
    make_client: AppFactory, policy_file: Path
) -> None:
    client, sink = await make_client()
    resp = await client.post("/hooks/PreToolUse", json=pre_tool_use("rm -rf /tmp/x"))
    assert resp.status == 200
    answer = await resp.json()
    assert decision_of(answer) == "deny"
    resp = await client.post("/hooks/PreToolUse", json=pre_tool_use("echo hi", tool_use_id="t2"))
    assert decision_of(await resp.json()) == "allow"
    audit = policy_file.parent / "gw-home" / "audit.jsonl"
    assert len(audit.read_text().splitlines()) == 2
    # a deny has no PostToolUse: its span is emitted at once, not an error, with the event
    (span,) = sink.spans
    assert span.name == "execute_tool Bash" and span.status.code == "unset"
    assert [e.name for e in span.events] == ["agent_gateway.policy.deny"]


async def test_a_decision_is_traced_only_after_its_answer(
    make_client: AppFactory, policy_file: Path
) -> None:
    # The record is on disk before the answer; spans (and the off-host copy) wait for it.
    client, sink = await make_client()
    service = client.server.app[SERVICE]
    body = pre_tool_use("rm -rf /tmp/x")
    reply = await service.hook("PreToolUse", body, json.dumps(body).encode(), Caller("t"))
    assert decision_of(dict(reply.body)) == "deny"
    audit = policy_file.parent / "gw-home" / "audit.jsonl"
    assert len(audit.read_text().splitlines()) == 1
    assert sink.spans == []
    assert reply.after is not None
    reply.after()
    (span,) = sink.spans
    assert [e.name for e in span.events] == ["agent_gateway.policy.deny"]


async def test_malformed_json_is_400_and_a_deny(make_client: AppFactory) -> None:
    client, _ = await make_client()
    resp = await client.post("/hooks/PreToolUse", data=b"{not json")
    assert resp.status == 400
    body = await resp.json()
    assert body["error"].startswith("malformed JSON")
    assert decision_of(body) == "deny"
    resp = await client.post("/hooks/PostToolUse", data=b"[1, 2]")
    assert resp.status == 400 and "hookSpecificOutput" not in await resp.json()


async def test_body_limit(make_client: AppFactory) -> None:
    client, _ = await make_client()
    big = json.dumps({"tool_name": "Bash", "pad": "x" * (MAX_HOOK_BODY + 10)})
    resp = await client.post("/hooks/PreToolUse", data=big)
    assert resp.status == 413
    assert decision_of(await resp.json()) == "deny"


async def test_observed_events_answer_empty(make_client: AppFactory) -> None:
    client, _ = await make_client()
    for event in ("Stop", "SessionStart", "Notification"):
        resp = await client.post(f"/hooks/{event}", json={"session_id": "s"})
        assert resp.status == 200 and await resp.json() == {}


async def test_auth_required_except_health(make_client: AppFactory) -> None:
    tokens = TokenTable({"sekret": Caller("default")})
    client, _ = await make_client(tokens=tokens)
    assert (await client.get("/healthz")).status == 200
    assert (await client.get("/readyz")).status == 200
    resp = await client.post("/hooks/PreToolUse", json=pre_tool_use("echo"))
    assert resp.status == 401
    resp = await client.post(
        "/hooks/PreToolUse", json=pre_tool_use("echo"), headers={"Authorization": "Bearer nope"}
    )
    assert resp.status == 401
    resp = await client.post(
        "/hooks/PreToolUse", json=pre_tool_use("echo"), headers={"Authorization": "Bearer sekret"}
    )
    assert resp.status == 200 and decision_of(await resp.json()) == "allow"
    # the proxy answers in the Messages API's shape, a status Claude Code does not retry
    refused = await client.post("/v1/messages", data=b"{}")
    assert refused.status == 403
    error = (await refused.json())["error"]
    assert error["type"] == "permission_error" and "AGENT_GATEWAY_TOKEN" in error["message"]


async def test_token_adds_policy_layers(make_client: AppFactory, tmp_path: Path) -> None:
    team = tmp_path / "team.yaml"
    team.write_text("version: 1\nname: team\npermissions:\n  deny:\n    - Bash(echo secret:*)\n")
    tokens = TokenTable({"a": Caller("team-a", (str(team),)), "b": Caller("team-b")})
    client, _ = await make_client(tokens=tokens)
    call = pre_tool_use("echo secret stuff")
    resp_a = await client.post(
        "/hooks/PreToolUse", json=call, headers={"Authorization": "Bearer a"}
    )
    resp_b = await client.post(
        "/hooks/PreToolUse", json=call, headers={"Authorization": "Bearer b"}
    )
    assert decision_of(await resp_a.json()) == "deny"
    assert decision_of(await resp_b.json()) == "allow"


async def test_run_request_validation(make_client: AppFactory, tmp_path: Path) -> None:
    client, _ = await make_client(runs_roots=[str(tmp_path)])
    resp = await client.post("/v1/runs", json={"prompt": "hi", "settings": "{}"})
    assert resp.status == 400
    assert "settings" in (await resp.json())["error"]
    resp = await client.post("/v1/runs", json={"prompt": ""})
    assert resp.status == 400
    resp = await client.post(
        "/v1/runs", json={"prompt": "hi", "permission_mode": "bypassPermissions"}
    )
    assert resp.status == 400
    assert "not allowed for remote runs" in (await resp.json())["error"]


async def test_a_caller_whose_layers_do_not_load_is_denied(
    make_client: AppFactory, tmp_path: Path
) -> None:
    broken = tmp_path / "team-broken.yaml"
    broken.write_text("version: 1\npermissions:\n  deny:\n    - Bash(rm:*\n")
    tokens = TokenTable({"broken": Caller("team-broken", (str(broken),))})
    client, _ = await make_client(tokens=tokens)
    auth = {"Authorization": "Bearer broken"}

    tool = await client.post("/hooks/PreToolUse", json=pre_tool_use("ls"), headers=auth)
    answer = await tool.json()
    assert tool.status == 200 and decision_of(answer) == "deny"
    assert f"{broken}:4:" in answer["hookSpecificOutput"]["permissionDecisionReason"]

    compact = {
        "hook_event_name": "PreCompact",
        "session_id": "s",
        "transcript_path": "/x",
        "trigger": "manual",
    }
    blocked = await (await client.post("/hooks/PreCompact", json=compact, headers=auth)).json()
    assert blocked["decision"] == "block"


def test_the_proxy_refusal_is_shown_by_claude_code_as_written() -> None:
    from gateway.server.auth import PROXY_AUTH_FAILURE

    # Claude Code 2.1.332 replaces any error message mentioning this header with its own
    # "Invalid API key" line; the gateway's must name the gateway token instead.
    assert "x-api-key" not in PROXY_AUTH_FAILURE.lower()
    assert "AGENT_GATEWAY_TOKEN" in PROXY_AUTH_FAILURE
