"""`from gateway import query`: an SDK app changes one import and gets the gateway."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest
from claude_agent_sdk import AssistantMessage, ClaudeAgentOptions, ResultMessage, UserMessage

from gateway import query
from gateway.scripted import ScriptedServer
from tests.e2e.harness import Sandbox

pytestmark = pytest.mark.e2e
Scripted = Callable[[dict[str, Any]], ScriptedServer]


async def test_sdk_style_app_gets_policy_and_tracing(
    sandbox: Sandbox, scripted: Scripted, monkeypatch: pytest.MonkeyPatch
) -> None:
    scripted(
        {
            "responses": [
                {
                    "when": "prompt",
                    "text": "deleting",
                    "tool_use": [{"name": "Bash", "input": {"command": "rm -rf keep"}}],
                },
                {"when": "tool_result", "text": "could not delete"},
            ]
        }
    )
    (sandbox.cwd / "keep").mkdir()
    policy = sandbox.cwd.parent / "org.yaml"
    policy.write_text("version: 1\npermissions:\n  deny:\n    - Bash(rm:*)\n")
    env = sandbox.env(AGENT_GATEWAY_POLICY=str(policy))
    env.pop("OTEL_TRACES_EXPORTER")  # no exporter: the local span file
    for key, value in env.items():
        monkeypatch.setenv(key, value)

    messages = [
        m async for m in query(prompt="clean up", options=ClaudeAgentOptions(cwd=str(sandbox.cwd)))
    ]

    assert (sandbox.cwd / "keep").is_dir()  # the policy denied the rm
    assert isinstance(messages[-1], ResultMessage) and messages[-1].subtype == "success"
    assert any(isinstance(m, AssistantMessage) for m in messages)
    denied = [
        b
        for m in messages
        if isinstance(m, UserMessage) and isinstance(m.content, list)
        for b in m.content
        if getattr(b, "is_error", False)
    ]
    assert denied and "Bash(rm:*)" in str(denied[0].content)
    spans = [
        json.loads(line)
        for line in (sandbox.gateway_home / "spans" / "spans.jsonl").read_text().splitlines()
    ]
    tool = next(s for s in spans if s["name"] == "execute_tool Bash")
    assert tool["attributes"]["agent_gateway.policy.decision"] == "deny"
    audit = (sandbox.gateway_home / "audit.jsonl").read_text().splitlines()
    assert json.loads(audit[0])["decision"] == "deny"
