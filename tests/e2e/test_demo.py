"""`agent-gateway demo`: the newcomer's first command must work offline, with no API key."""

from __future__ import annotations

import pytest

from tests.e2e.harness import Sandbox, gateway_cli
from tests.otlp_receiver import OtlpReceiver

pytestmark = pytest.mark.e2e


def test_demo_runs_the_real_loop_and_shows_the_policy_and_trace(sandbox: Sandbox) -> None:
    env = sandbox.env()
    env.pop("ANTHROPIC_API_KEY")
    env.pop("ANTHROPIC_BASE_URL")
    env.pop("OTEL_TRACES_EXPORTER")  # no exporter: spans go to the local span file
    env["COLUMNS"] = "200"
    out = gateway_cli(sandbox, "demo", env=env)

    assert out.returncode == 0, out.stderr
    assert "scripted" in out.stdout
    assert "tool call Write" in out.stdout and "tool call Bash" in out.stdout
    assert "denies Bash(rm -rf:*)" in out.stdout  # the policy blocked the delete
    assert "result: success" in out.stdout and "turns 4" in out.stdout
    assert "# Release notes" in out.stdout  # the file the agent wrote survived
    assert "invoke_agent claude-code" in out.stdout and "execute_tool Bash" in out.stdout
    # The demo keeps its state in its own workspace, not the caller's AGENT_GATEWAY_HOME.
    assert not any(sandbox.gateway_home.iterdir())


def test_demo_with_an_exporter_configured_still_ends_with_the_trace(sandbox: Sandbox) -> None:
    env = sandbox.env()
    env.pop("ANTHROPIC_API_KEY")
    env.pop("ANTHROPIC_BASE_URL")
    env["COLUMNS"] = "200"
    with OtlpReceiver() as receiver:
        env.update(OTEL_TRACES_EXPORTER="otlp", OTEL_EXPORTER_OTLP_ENDPOINT=receiver.endpoint)
        out = gateway_cli(sandbox, "demo", env=env)
        spans = receiver.wait_for(
            lambda got: any(s["name"] == "invoke_agent claude-code" for s in got), timeout=5
        )
    assert out.returncode == 0, out.stderr
    # the spans went to the exporter, and a local copy drew the tree at the end
    assert "no trace yet" not in out.stdout
    tail = out.stdout.split("agent-gateway trace show", 1)[1]
    assert "invoke_agent claude-code" in tail and "execute_tool Bash" in tail
    assert "policy deny" in tail
    assert "$-0" not in tail and "diff $0" in tail
    assert {s["trace_id"] for s in spans if s["name"] == "invoke_agent claude-code"}
