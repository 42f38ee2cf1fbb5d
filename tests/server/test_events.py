"""No silent paths: unknown event names are 404s, and every handled request is audited."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest

from gateway.hookio.events import HOOK_EVENTS, spelled_like
from gateway.server.claude_settings import command_hook_settings, gateway_settings, managed_settings
from tests.server.conftest import AppFactory
from tests.server.test_app import decision_of, pre_tool_use

FIXTURES = Path(__file__).parents[1] / "fixtures" / "claude-code-2.1.332"
REPO = Path(__file__).parents[2]


def audit_records(policy_file: Path) -> list[dict[str, Any]]:
    path = policy_file.parent / "gw-home" / "audit.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines()]


@pytest.mark.parametrize(
    "event",
    ["pretooluse", "PRETOOLUSE", "pre-tool-use", "PreToolUse ", "Pretooluse", "SomeFutureEvent",
     "bad-name!", "x" * 300],
)
async def test_unknown_event_names_are_404(
    make_client: AppFactory, policy_file: Path, event: str
) -> None:
    client, _ = await make_client()
    resp = await client.post(f"/hooks/{event}", json=pre_tool_use("rm -rf /"))
    assert resp.status == 404
    assert "unknown hook event" in (await resp.json())["error"]
    assert not (policy_file.parent / "gw-home" / "audit.jsonl").exists()


async def test_a_wrong_case_spelling_is_named_in_the_404(make_client: AppFactory) -> None:
    client, _ = await make_client()
    resp = await client.post("/hooks/pretooluse", json={})
    assert "Claude Code's name is PreToolUse" in (await resp.json())["error"]
    assert spelled_like("pre_compact") == "PreCompact" and spelled_like("nope") is None


async def test_every_known_event_is_answered_and_audited(
    make_client: AppFactory, policy_file: Path
) -> None:
    client, _ = await make_client()
    for event in HOOK_EVENTS:
        if event in ("PreToolUse", "PreCompact"):
            continue
        resp = await client.post(f"/hooks/{event}", json={"session_id": "s-1"})
        assert resp.status == 200, event
        assert await resp.json() == {}
    records = audit_records(policy_file)
    assert [r["event"] for r in records] == [
        e for e in HOOK_EVENTS if e not in ("PreToolUse", "PreCompact")
    ]
    assert {r["decision"] for r in records} == {"none"}
    assert all("decides nothing" in r["reason"] and r["session_id"] == "s-1" for r in records)


async def test_post_tool_use_is_audited_as_deciding_nothing(
    make_client: AppFactory, policy_file: Path
) -> None:
    client, sink = await make_client()
    body = {**pre_tool_use("echo hi"), "hook_event_name": "PostToolUse", "tool_response": {}}
    resp = await client.post("/hooks/PostToolUse", json=body)
    assert resp.status == 200
    (record,) = audit_records(policy_file)
    assert record["event"] == "PostToolUse" and record["decision"] == "none"
    assert record["tool"] == "Bash" and record["tool_use_id"] == "tu-1"
    # this replica never saw the call's PreToolUse: the span says it does not know, rather
    # than deciding again
    (span,) = sink.spans
    assert span.attributes["agent_gateway.policy.decision"] == "unknown"
    assert "agent_gateway.policy.rule_id" not in span.attributes


async def test_the_tool_span_carries_the_decision_enforced_even_after_a_reload(
    make_client: AppFactory, policy_file: Path
) -> None:
    client, sink = await make_client()
    resp = await client.post("/hooks/PreToolUse", json=pre_tool_use("echo hi"))
    assert decision_of(await resp.json()) == "allow"
    # The policy changes before the tool finishes: echo is now denied (and rm still is: a
    # change that gave a deny rule up would be held for 5 s, policy/reload.py).
    policy_file.write_text(
        "version: 1\nname: test\npermissions:\n  deny:\n    - Bash(rm:*)\n    - Bash(echo:*)\n"
    )
    for attempt in range(100):
        later = pre_tool_use("echo again", tool_use_id=f"later-{attempt}")
        resp = await client.post("/hooks/PreToolUse", json=later)
        if decision_of(await resp.json()) == "deny":
            break
        await asyncio.sleep(0.05)
    else:
        pytest.fail("the policy change was never picked up")
    body = {**pre_tool_use("echo hi"), "hook_event_name": "PostToolUse", "duration_ms": 3}
    resp = await client.post("/hooks/PostToolUse", json=body)
    assert resp.status == 200
    (span,) = [s for s in sink.spans if s.attributes["gen_ai.tool.call.id"] == "tu-1"]
    assert span.attributes["agent_gateway.policy.decision"] == "allow"
    rule = span.attributes["agent_gateway.policy.rule_id"]
    assert rule == f"{policy_file.name}:permissions.allow[1]"
    # A second PostToolUse for the same call (a retry) reads the decision kept in the trace
    # state: still the one enforced, never the current policy's deny.
    await client.post("/hooks/PostToolUse", json=body)
    assert sink.spans[-1].attributes["agent_gateway.policy.decision"] == "allow"


async def test_a_body_naming_another_event_is_refused(make_client: AppFactory) -> None:
    client, _ = await make_client()
    body = {**pre_tool_use("echo hi"), "hook_event_name": "PostToolUse"}
    resp = await client.post("/hooks/PreToolUse", json=body)
    assert resp.status == 400 and decision_of(await resp.json()) == "deny"
    resp = await client.post("/hooks/Stop", json={"hook_event_name": "stop"})
    assert resp.status == 400


def test_event_names_cover_what_claude_code_sent() -> None:
    seen = {
        json.loads(line)["hook_event_name"]
        for line in (FIXTURES / "hook-inputs.jsonl").read_text().splitlines()
        if line.strip()
    }
    assert seen and seen <= set(HOOK_EVENTS)
    assert len(set(HOOK_EVENTS)) == len(HOOK_EVENTS)


def _named_events(settings: dict[str, Any]) -> set[str]:
    names = set(settings.get("hooks", {}))
    for matchers in settings.get("hooks", {}).values():
        for matcher in matchers:
            for handler in matcher["hooks"]:
                url = handler.get("url", "")
                if "/hooks/" in url:
                    names.add(url.rsplit("/hooks/", 1)[1].split("?", 1)[0])  # ?sandbox=...
    return names


@pytest.mark.parametrize(
    "settings",
    [
        gateway_settings("http://gw:8787"),
        gateway_settings("http://gw:8787", with_token=False, proxy=False),
        managed_settings("https://gw.example.com"),
        command_hook_settings("http://gw:8787"),
    ],
)
def test_generated_settings_name_only_claude_code_events(settings: dict[str, Any]) -> None:
    named = _named_events(settings)
    assert named and named <= set(HOOK_EVENTS), named - set(HOOK_EVENTS)


@pytest.mark.parametrize("template", sorted((REPO / "hooks").rglob("*.json")))
def test_shipped_templates_name_only_claude_code_events(template: Path) -> None:
    named = _named_events(json.loads(template.read_text()))
    assert named <= set(HOOK_EVENTS), named - set(HOOK_EVENTS)
