"""The audit trail's off-host copy with the real Claude Code: through `agent-gateway run` and
through `agent-gateway serve` (bare Claude Code on http hooks), one OpenTelemetry log record
per decision reaches an OTLP receiver with the decision, rule id, tool, redacted input and
record hash; `audit verify --against` the received copy passes, and names the missing records
once the local log is cut (even when the local checks are fooled)."""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from gateway.hashchain import GENESIS, link
from gateway.scripted import ScriptedServer
from gateway.server.claude_settings import gateway_settings
from tests.e2e.harness import RunOutcome, Sandbox, claude_run, gateway_cli, gateway_run
from tests.otlp_receiver import Logs, OtlpReceiver
from tests.server.processes import ServeProcess

pytestmark = pytest.mark.e2e
Scripted = Callable[[dict[str, Any]], ScriptedServer]
ROOT = Path(__file__).parents[2]
TOKEN = "e2e-audit-token"
SECRET = "sk-ant-" + "Zq9" * 12

POLICY = """\
version: 1
name: e2e-audit
permissions:
  deny:
    - Bash(rm:*)
  allow:
    - Bash(touch:*)
"""


def bash(command: str, when: str, times: int = 0) -> dict[str, Any]:
    return {"when": when, "times": times, "text": "ok",
            "tool_use": [{"name": "Bash", "input": {"command": command}}],
            "usage": {"input_tokens": 900, "output_tokens": 30}}


SCENARIO = {
    "responses": [
        bash("touch made.txt", "prompt"),
        bash(f"rm victim.txt --api-key {SECRET}", "tool_result", times=1),
        {"when": "tool_result", "text": "Done.", "stop_reason": "end_turn"},
    ]
}


@pytest.fixture
def receiver() -> Iterator[OtlpReceiver]:
    with OtlpReceiver() as r:
        yield r


@pytest.fixture
def policy(sandbox: Sandbox) -> str:
    path = sandbox.home / "policy.yaml"
    path.write_text(POLICY)
    return str(path)


@pytest.fixture
def key_file(sandbox: Sandbox) -> Path:
    path = sandbox.home / "secrets" / "audit.key"
    path.parent.mkdir()
    path.write_text(os.urandom(32).hex() + "\n")
    path.chmod(0o600)
    return path


def decision_logs(logs: Logs) -> Logs:
    return [r for r in logs if r["event_name"] == "agent_gateway.audit.decision"]


def local_records(sandbox: Sandbox) -> list[dict[str, Any]]:
    text = (sandbox.gateway_home / "audit.jsonl").read_text()
    return [json.loads(line) for line in text.splitlines()]


def check_the_copy(sandbox: Sandbox, logs: Logs, out: RunOutcome) -> None:
    """One log record per audit record, as the local log has it; redacted; tool decisions
    tied to their tool span. (Behind serve, events that decide nothing are audited too.)"""
    everything = local_records(sandbox)
    decisions = decision_logs(logs)
    assert len(decisions) == len(everything)
    by_hash = {r["attributes"]["agent_gateway.audit.hash"]: r for r in decisions}
    assert set(by_hash) == {r["hash"] for r in everything}
    records = [r for r in everything if "event" not in r]
    assert len(records) == 2
    tool_uses = {b["input"]["command"]: b["id"] for m in out.messages
                 if m.get("type") == "assistant" for b in m["message"]["content"]
                 if b.get("type") == "tool_use"}
    for record in records:
        log = by_hash[record["hash"]]
        attrs = log["attributes"]
        assert json.loads(log["body"]) == record  # the record itself, hash and all
        assert attrs["agent_gateway.audit.position"] == record["seq"]
        assert attrs["gen_ai.tool.name"] == "Bash"
        assert record["tool_use_id"] in tool_uses.values()
        assert len(log["trace_id"]) == 32 and len(log["span_id"]) == 16
    deny = next(by_hash[r["hash"]] for r in records if r["decision"] == "deny")
    assert deny["attributes"]["agent_gateway.policy.decision"] == "deny"
    assert deny["attributes"]["agent_gateway.policy.rule_id"] == "policy.yaml:permissions.deny[1]"
    assert json.loads(deny["body"])["input"] == {
        "command": "rm victim.txt --api-key [REDACTED:builtin.anthropic-key]"}
    assert SECRET not in json.dumps(logs) and SECRET not in json.dumps(records)
    allow = next(by_hash[r["hash"]] for r in records if r["decision"] == "allow")
    assert json.loads(allow["body"])["input"] == {"command": "touch made.txt"}


def check_against(sandbox: Sandbox, copy: Path, env: dict[str, str]) -> None:
    """The copy matches; after a cut (checkpoint rewritten to match, as a writer with
    everything local and no key could) the local checks pass and the copy names the loss."""
    ok = gateway_cli(sandbox, "audit", "verify", "--against", str(copy), env=env)
    assert ok.returncode == 0, ok.stderr
    records = local_records(sandbox)
    assert f"OK, {len(records)} records" in ok.stdout and "matches" in ok.stdout
    log = sandbox.gateway_home / "audit.jsonl"
    log.write_text(json.dumps(records[0], sort_keys=True) + "\n")
    cp_file = log.with_name("audit.jsonl.checkpoint")
    checkpoint = json.loads(cp_file.read_text())
    body = {k: v for k, v in checkpoint.items() if k not in ("hash", "prev_hash", "mac")}
    body.update(count=1, head=records[0]["hash"])
    cp_file.write_text(json.dumps(link(body, checkpoint.get("prev_hash", GENESIS))) + "\n")
    cut = gateway_cli(sandbox, "audit", "verify", "--against", str(copy), env=env)
    assert cut.returncode == 1
    missing = "record 2" if len(records) == 2 else f"records 2-{len(records)}"
    assert f"{missing}: in the export, missing from the local log" in cut.stderr, cut.stderr


def test_through_agent_gateway_run(
    sandbox: Sandbox, scripted: Scripted, receiver: OtlpReceiver, policy: str
) -> None:
    scripted(SCENARIO)
    (sandbox.cwd / "victim.txt").write_text("precious")
    env = sandbox.env(OTEL_TRACES_EXPORTER="otlp", OTEL_LOGS_EXPORTER="otlp",
                      OTEL_EXPORTER_OTLP_ENDPOINT=receiver.endpoint)
    out = gateway_run(sandbox, "tidy up", "--policy", policy, "--allowed-tools", "Bash", env=env)
    assert out.returncode == 0, out.stderr[-3000:]
    assert (sandbox.cwd / "made.txt").exists()
    assert (sandbox.cwd / "victim.txt").read_text() == "precious"
    # The run flushes its exports before it exits: the records are there now.
    logs = receiver.wait_for_logs(lambda got: len(decision_logs(got)) >= 2, timeout=2)
    check_the_copy(sandbox, logs, out)
    # The log records sit on the run's own tool spans.
    tools = {s["attributes"]["gen_ai.tool.call.id"]: s for s in receiver.spans
             if s["name"].startswith("execute_tool")}
    for log in decision_logs(logs):
        body = json.loads(log["body"])
        if "event" in body:
            continue  # an event the gateway decides nothing for: no tool span of its own
        span = tools[body["tool_use_id"]]
        assert (log["trace_id"], log["span_id"]) == (span["trace_id"], span["span_id"])
    copy = receiver.write_log_lines(sandbox.home / "received.jsonl")
    check_against(sandbox, copy, sandbox.env(PYTHONPATH=str(ROOT)))


def test_through_agent_gateway_serve_with_a_key(
    sandbox: Sandbox, scripted: Scripted, receiver: OtlpReceiver, policy: str, key_file: Path
) -> None:
    upstream = scripted(SCENARIO)
    (sandbox.cwd / "victim.txt").write_text("precious")
    serve_env = {k: v for k, v in os.environ.items() if not k.startswith(("OTEL_", "ANTHROPIC_"))}
    serve_env.update(
        AGENT_GATEWAY_HOME=str(sandbox.gateway_home),
        AGENT_GATEWAY_TOKEN=TOKEN,
        AGENT_GATEWAY_CLAUDE_PROJECTS=str(sandbox.projects_root),
        AGENT_GATEWAY_AUDIT_KEY_FILE=str(key_file),
        OTEL_TRACES_EXPORTER="otlp",
        OTEL_LOGS_EXPORTER="otlp",  # logs are off unless asked for, endpoint or not
        OTEL_EXPORTER_OTLP_ENDPOINT=receiver.endpoint,
        OTEL_BSP_SCHEDULE_DELAY="100",
        OTEL_BLRP_SCHEDULE_DELAY="100",
    )
    with ServeProcess([policy], upstream.url, serve_env, log=sandbox.home / "serve.log") as gw:
        env = sandbox.env(AGENT_GATEWAY_TOKEN=TOKEN,
                          ANTHROPIC_CUSTOM_HEADERS=f"X-Agent-Gateway-Token: {TOKEN}")
        out = claude_run(sandbox, "tidy up", "--settings", json.dumps(gateway_settings(gw.url)),
                         "--allowedTools", "Bash", env=env)
        assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-2000:]
        assert (sandbox.cwd / "made.txt").exists()
        assert (sandbox.cwd / "victim.txt").read_text() == "precious"
    # The service has stopped and flushed: every record it wrote has its copy.
    logs = receiver.wait_for_logs(
        lambda got: len(decision_logs(got)) >= len(local_records(sandbox)), timeout=15)
    check_the_copy(sandbox, logs, out)
    records = local_records(sandbox)
    assert all(len(r["mac"]) == 64 for r in records)
    # Behind serve, span ids come from the session and tool_use ids, like the service's spans.
    spans = receiver.wait_for(lambda s: sum(x["name"] == "execute_tool Bash" for x in s) >= 2,
                              timeout=15)
    tools = {s["attributes"]["gen_ai.tool.call.id"]: s for s in spans
             if s["name"] == "execute_tool Bash"}
    for log in decision_logs(logs):
        body = json.loads(log["body"])
        if "event" in body:
            continue  # an event the gateway decides nothing for: no tool span of its own
        span = tools[body["tool_use_id"]]
        assert (log["trace_id"], log["span_id"]) == (span["trace_id"], span["span_id"])
    copy = receiver.write_log_lines(sandbox.home / "received.jsonl")
    env = sandbox.env(PYTHONPATH=str(ROOT), AGENT_GATEWAY_AUDIT_KEY_FILE=str(key_file))
    # With the key, the same cut is caught locally too: the rewritten checkpoint has no MAC.
    ok = gateway_cli(sandbox, "audit", "verify", env=env)
    assert ok.returncode == 0 and "MACs checked" in ok.stdout, ok.stderr
    check_against(sandbox, copy, env)
    local = gateway_cli(sandbox, "audit", "verify", env=env)
    assert local.returncode == 1 and "FAILED at record 1: checkpoint #" in local.stderr
    assert "no MAC" in local.stderr
