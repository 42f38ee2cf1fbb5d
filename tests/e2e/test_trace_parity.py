"""The same session gives the same trace through `agent-gateway run` and behind `serve`.

Each scripted session runs twice against the real Claude Code: once wrapped by
`agent-gateway run`, once as a bare `claude -p` wired to `agent-gateway serve` (http hooks
and the Messages API proxy). Both export over OTLP to a receiver; the two trees are compared
span by span: every span's path from the root, each step named with its name, status, events
and the attributes both vantage points know (operation, tool, agent, tokens, cost, finish
reasons, decision, turn index). The compaction's own model call is a chat inside the compaction
span in both; `run` never sees that response, so its finish reason is not compared.
"""

from __future__ import annotations

import json
import os
import shlex
import signal
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import pytest

from gateway.scripted import ScriptedServer
from gateway.server.claude_settings import gateway_settings
from tests import genai_shapes as shapes
from tests.e2e.harness import CLAUDE_BIN, RunOutcome, Sandbox, claude_run, gateway_run
from tests.e2e.test_service import round_robin
from tests.otlp_receiver import OtlpReceiver, Spans
from tests.server.processes import ServeProcess, ThreadedApp

pytestmark = pytest.mark.e2e
Span = dict[str, Any]
Scripted = Callable[[dict[str, Any]], ScriptedServer]

POLICY = """\
version: 1
name: parity
permissions:
  allow:
    - Bash(touch:*)
    - Bash(echo:*)
rules:
  - id: no-rm
    reason: Deleting is for humans.
    tool: Bash
    command: "rm:*"
"""
SCOPE = "agent_gateway.telemetry"
COMPARED = (
    "gen_ai.operation.name",
    "gen_ai.tool.name",
    "gen_ai.agent.name",
    "gen_ai.usage.input_tokens",
    "gen_ai.usage.output_tokens",
    "gen_ai.usage.cache_read.input_tokens",
    "gen_ai.usage.cache_creation.input_tokens",
    "gen_ai.response.finish_reasons",
    "agent_gateway.policy.decision",
    "agent_gateway.policy.rule_id",
    "agent_gateway.turn.index",
    "agent_gateway.turn.tool_calls",
    "agent_gateway.tool.is_error",
    "agent_gateway.compaction.trigger",
    "openinference.span.kind",
)


def usage(inp: int, out: int) -> dict[str, int]:
    return {"input_tokens": inp, "output_tokens": out, "cache_read_input_tokens": inp // 10}


def bash(command: str, when: str, use: dict[str, int], times: int = 1) -> dict[str, Any]:
    return {
        "when": when,
        "times": times,
        "text": f"running {command}",
        "tool_use": [{"name": "Bash", "input": {"command": command}}],
        "usage": use,
    }


TOOLS_AND_DENIAL = {
    "responses": [
        bash("touch made.txt", "prompt", usage(1201, 41)),
        bash("rm victim.txt", "tool_result", usage(1302, 42)),
        {"when": "tool_result", "text": "All done.", "usage": usage(1403, 43)},
    ]
}
SUBAGENT = {
    "responses": [
        {
            "when": "prompt",
            "text": "Delegating.",
            "usage": usage(1811, 81),
            "tool_use": [
                {
                    "name": "Task",
                    "input": {
                        "description": "look around",
                        "prompt": "Write a marker file.",
                        "subagent_type": "general-purpose",
                    },
                }
            ],
        },
        bash("echo from-sub > sub.txt", "subagent", usage(1911, 91)),
        {"when": "tool_result", "text": "One done.", "usage": usage(2011, 21)},
        {"when": "tool_result", "text": "Two done.", "usage": usage(2111, 22)},
    ],
    "default": {"text": "All done.", "times": 0, "usage": usage(2211, 23)},
}
ERROR_RESULT = {"responses": [bash("echo again", "any", usage(1511, 51), times=0)]}
COMPACTION = {
    "responses": [
        {
            "when": "prompt",
            "text": "Hello there, a long enough answer to summarise later.",
            "usage": usage(1611, 66),
        },
        {
            "when": "compaction",
            "text": "<summary>The user said hello.</summary>",
            "usage": usage(1711, 77),
        },
    ]
}


# --- the two ways to run a session ----------------------------------------------------------
def otlp(receiver: OtlpReceiver) -> dict[str, str]:
    return {
        "OTEL_TRACES_EXPORTER": "otlp",
        "OTEL_EXPORTER_OTLP_ENDPOINT": receiver.endpoint,
        "OTEL_EXPORTER_OTLP_PROTOCOL": "http/protobuf",
        "OTEL_BSP_SCHEDULE_DELAY": "100",
    }


def run_wrapped(
    sandbox: Sandbox, receiver: OtlpReceiver, policy: str, prompt: str, *args: str
) -> RunOutcome:
    env = sandbox.env(**otlp(receiver))
    out = gateway_run(sandbox, prompt, "--policy", policy, *args, env=env)
    assert out.results, out.stderr[-3000:]
    return out


def run_served(sandbox: Sandbox, gateway_url: str, prompt: str, *args: str) -> RunOutcome:
    settings = gateway_settings(gateway_url, with_token=False)
    out = claude_run(sandbox, prompt, "--settings", json.dumps(settings), *args)
    assert out.results, out.stderr[-3000:]
    return out


def serve_env(
    sandbox: Sandbox, receiver: OtlpReceiver, replica: str = "a", **extra: str
) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OTEL_", "ANTHROPIC_"))}
    env.update(
        AGENT_GATEWAY_HOME=str(sandbox.gateway_home),
        AGENT_GATEWAY_CLAUDE_PROJECTS=str(sandbox.projects_root),
        OTEL_RESOURCE_ATTRIBUTES=f"replica={replica}",
        **otlp(receiver),
    )
    env.pop("AGENT_GATEWAY_TOKEN", None)
    env.update(extra)
    return env


@pytest.fixture
def policy(sandbox: Sandbox) -> str:
    path = sandbox.home / "policy.yaml"
    path.write_text(POLICY)
    return str(path)


# --- comparing trees ------------------------------------------------------------------------
def trace_of(spans: Spans, session: str, since_ns: int = 0) -> Spans:
    roots = [
        s
        for s in spans
        if s["parent_span_id"] is None and s["attributes"].get("gen_ai.conversation.id") == session
    ]
    assert roots, f"no root for {session}"
    trace_id = roots[-1]["trace_id"]
    return [
        s
        for s in spans
        if s["trace_id"] == trace_id and s["scope"] == SCOPE and s["end_ns"] >= since_ns
    ]


def signature(span: Span) -> tuple[Any, ...]:
    a = span["attributes"]
    compared = tuple((k, _plain(a[k])) for k in COMPARED if k in a)
    cost = a.get("gen_ai.usage.cost")
    events = tuple(sorted(e["name"] for e in span["events"]))
    status = span["status"]["code"]
    return (span["name"], status, events, compared, round(cost, 9) if cost else None)


def _plain(value: Any) -> Any:
    return tuple(value) if isinstance(value, list) else value


def paths(trace: Spans) -> Counter[tuple[Any, ...]]:
    """Each span as the signatures from the root down to it."""
    by_id = {s["span_id"]: s for s in trace}
    out: Counter[tuple[Any, ...]] = Counter()

    def sign(span: Span) -> tuple[Any, ...]:
        parent = by_id.get(span["parent_span_id"]) or {}
        if parent.get("name") == "compaction":  # run knows its tokens, not its response
            attributes = dict(span["attributes"])
            attributes.pop("gen_ai.response.finish_reasons", None)
            span = {**span, "attributes": attributes}
        return signature(span)

    for span in trace:
        chain = [sign(span)]
        node = span
        while node["parent_span_id"] in by_id:
            node = by_id[node["parent_span_id"]]
            chain.append(sign(node))
        assert node["parent_span_id"] is None, f"{span['name']} is not connected to the root"
        out[tuple(reversed(chain))] += 1
    return out


def assert_nested_in_time(trace: Spans) -> None:
    by_id = {s["span_id"]: s for s in trace}
    for span in trace:
        parent = by_id.get(span["parent_span_id"])
        if parent is not None:
            assert parent["start_ns"] - 1_000_000 <= span["start_ns"], span["name"]
            assert span["end_ns"] <= parent["end_ns"] + 1_000_000, span["name"]


def assert_same_tree(wrapped: Spans, served: Spans, *, extra: int = 0) -> None:
    assert_nested_in_time(wrapped)
    assert_nested_in_time(served)
    mine, theirs = paths(wrapped), paths(served)
    missing = mine - theirs
    assert not missing, f"not behind serve: {sorted(missing)}"
    surplus = theirs - mine
    assert sum(surplus.values()) == extra, f"only behind serve: {sorted(surplus)}"


def wait_complete(receiver: OtlpReceiver, session: str, count: int, since_ns: int = 0) -> Spans:
    """The serve trace once it has `count` spans, root included (spans arrive in batches)."""

    def done(spans: Spans) -> bool:
        try:
            return len(trace_of(spans, session, since_ns)) >= count
        except AssertionError:
            return False

    return trace_of(receiver.wait_for(done, timeout=20), session, since_ns)


# --- the sessions ---------------------------------------------------------------------------
@contextmanager
def gateways(
    sandbox: Sandbox, receiver: OtlpReceiver, policy: str, upstream: str, redis_url: str = ""
) -> Iterator[str]:
    """One `serve` (its URL), or with `redis_url` two replicas behind a round-robin."""
    extra = ("--redis-url", redis_url) if redis_url else ()
    if not redis_url:
        with ServeProcess(
            [policy],
            upstream,
            serve_env(sandbox, receiver),
            log=sandbox.home / "serve.log",
            args=extra,
        ) as gateway:
            yield gateway.url
        return
    with (
        ServeProcess(
            [policy],
            upstream,
            serve_env(sandbox, receiver, "a"),
            log=sandbox.home / "serve-a.log",
            args=extra,
        ) as a,
        ServeProcess(
            [policy],
            upstream,
            serve_env(sandbox, receiver, "b"),
            log=sandbox.home / "serve-b.log",
            args=extra,
        ) as b,
        ThreadedApp(round_robin([a.url, b.url])) as balancer,
    ):
        yield balancer.url


def compare(
    sandbox: Sandbox,
    scripted: Scripted,
    receiver: OtlpReceiver,
    policy: str,
    name: str,
    redis_url: str = "",
) -> tuple[Spans, Spans]:
    scenario, prompt, args, claude_args = SESSIONS[name]
    scripted(scenario)
    wrapped_out = run_wrapped(sandbox, receiver, policy, prompt, *args)
    wrapped = trace_of(receiver.wait_for(lambda s: True, timeout=1), wrapped_out.session_id)
    upstream = scripted(scenario)  # the same answers, numbered from the start again
    with gateways(sandbox, receiver, policy, upstream.url, redis_url) as url:
        served_out = run_served(sandbox, url, prompt, *claude_args)
        assert served_out.result["subtype"] == wrapped_out.result["subtype"]
        served = wait_complete(receiver, served_out.session_id, len(wrapped))
    return wrapped, served


SESSIONS = {
    "tools-and-denial": (
        TOOLS_AND_DENIAL,
        "tidy up",
        ("--allowed-tools", "Bash"),
        ("--allowedTools", "Bash"),
    ),
    "subagent": (
        SUBAGENT,
        "delegate",
        ("--allowed-tools", "Bash,Task", "--max-turns", "8"),
        ("--allowedTools", "Bash,Task", "--max-turns", "8"),
    ),
    "error-result": (
        ERROR_RESULT,
        "loop",
        ("--allowed-tools", "Bash", "--max-turns", "1"),
        ("--allowedTools", "Bash", "--max-turns", "1"),
    ),
}


@pytest.fixture
def receiver() -> Iterator[OtlpReceiver]:
    with OtlpReceiver() as r:
        yield r


def check_details(name: str, served: Spans) -> None:
    by_id = {s["span_id"]: s for s in served}
    if name == "tools-and-denial":
        (denied,) = [s for s in served if s["events"]]
        event = denied["events"][0]
        assert event["name"] == "agent_gateway.policy.deny"
        assert event["attributes"]["agent_gateway.policy.rule_id"].endswith("no-rm")
        assert denied["status"]["code"] == "STATUS_CODE_UNSET"
        assert by_id[denied["parent_span_id"]]["name"] == "turn"
    if name == "subagent":
        (agent,) = [s for s in served if s["name"] == "invoke_agent general-purpose"]
        assert by_id[agent["parent_span_id"]]["name"] == "execute_tool Agent"
        assert agent["attributes"]["gen_ai.agent.id"]
        assert any(by_id.get(s["parent_span_id"]) is agent for s in served if s["name"] == "turn")
    root = next(s for s in served if s["parent_span_id"] is None)
    expected = "STATUS_CODE_ERROR" if name == "error-result" else "STATUS_CODE_OK"
    assert root["status"]["code"] == expected


@pytest.mark.parametrize("name", sorted(SESSIONS))
def test_run_and_serve_give_the_same_tree(
    name: str, sandbox: Sandbox, scripted: Scripted, receiver: OtlpReceiver, policy: str
) -> None:
    wrapped, served = compare(sandbox, scripted, receiver, policy, name)
    assert_same_tree(wrapped, served)
    check_details(name, served)


@pytest.mark.parametrize("name", ["tools-and-denial", "subagent"])
def test_two_replicas_behind_a_round_robin_give_the_same_tree(
    name: str,
    sandbox: Sandbox,
    scripted: Scripted,
    receiver: OtlpReceiver,
    policy: str,
    redis_url: str,
) -> None:
    wrapped, served = compare(sandbox, scripted, receiver, policy, name, redis_url)
    assert {s["resource"]["replica"] for s in served} == {"a", "b"}
    assert_same_tree(wrapped, served)
    check_details(name, served)


def run_local(sandbox: Sandbox, receiver: OtlpReceiver, policy: str, prompt: str, *args: str
              ) -> RunOutcome:
    """A bare `claude -p` wired by `agent-gateway settings --command-hook --policy P`: no
    gateway process, every hook a command of this checkout."""
    command = subprocess.run(
        [sys.executable, "-m", "gateway", "settings", "--command-hook", "--policy", policy],
        capture_output=True, text=True, check=True, env=sandbox.env(**otlp(receiver)))
    settings = json.loads(command.stdout.replace(
        '"agent-gateway hook', f'"{shlex.quote(sys.executable)} -m gateway hook'))
    # Claude Code hands its hooks no OTEL_* variable: the settings carry them.
    assert settings["env"]["AGENT_GATEWAY_OTEL_EXPORTER_OTLP_ENDPOINT"] == receiver.endpoint
    out = claude_run(sandbox, prompt, "--settings", json.dumps(settings), *args)
    assert out.results, out.stderr[-3000:]
    return out


@pytest.mark.parametrize("name", sorted(SESSIONS))
def test_run_and_local_command_hooks_give_the_same_tree(
    name: str, sandbox: Sandbox, scripted: Scripted, receiver: OtlpReceiver, policy: str
) -> None:
    """No proxy sees the model's responses: the hooks read them from the transcripts."""
    scenario, prompt, args, claude_args = SESSIONS[name]
    scripted(scenario)
    wrapped_out = run_wrapped(sandbox, receiver, policy, prompt, *args)
    wrapped = trace_of(receiver.wait_for(lambda s: True, timeout=1), wrapped_out.session_id)
    scripted(scenario)
    local_out = run_local(sandbox, receiver, policy, prompt, *claude_args)
    assert local_out.result["subtype"] == wrapped_out.result["subtype"]
    local = wait_complete(receiver, local_out.session_id, len(wrapped))
    assert_same_tree(wrapped, local)
    check_details(name, local)
    # OTLP was asked for: no local span file (the default without an exporter)
    assert not (sandbox.gateway_home / "spans" / "spans.jsonl").exists()
    assert not list((sandbox.gateway_home / "trace-journal").glob("*.jsonl"))  # SessionEnd


def test_compaction_gives_the_same_tree_with_its_model_call(
    sandbox: Sandbox, scripted: Scripted, receiver: OtlpReceiver, policy: str
) -> None:
    scripted(COMPACTION)
    first = run_wrapped(sandbox, receiver, policy, "say hello")
    compacted = run_wrapped(sandbox, receiver, policy, "/compact", "--resume", first.session_id)
    wrapped = trace_of(receiver.wait_for(lambda s: True, timeout=1), compacted.session_id)
    wrapped = [s for s in wrapped if s["trace_id"] == wrapped[-1]["trace_id"]]
    upstream = scripted(COMPACTION)
    with gateways(sandbox, receiver, policy, upstream.url) as url:
        hello = run_served(sandbox, url, "say hello")
        wait_complete(receiver, hello.session_id, 3)
        since = time.time_ns()
        run_served(sandbox, url, "/compact", "--resume", hello.session_id)
        served = wait_complete(receiver, hello.session_id, len(wrapped), since)
    assert_same_tree(wrapped, served)
    (comp,) = [s for s in served if s["name"] == "compaction"]
    (call,) = [s for s in served if s["parent_span_id"] == comp["span_id"]]
    assert call["name"].startswith("chat ")
    assert comp["attributes"]["agent_gateway.compaction.archive_id"]
    assert comp["attributes"]["agent_gateway.compaction.trigger"] == "manual"


def test_a_killed_claude_p_gets_its_root_from_the_idle_timeout(
    sandbox: Sandbox, scripted: Scripted, receiver: OtlpReceiver, policy: str
) -> None:
    # (Claude Code refuses a plain `sleep 60`: it asks for run_in_background)
    long_call = "python3 -c 'import time; time.sleep(60)'"
    upstream = scripted({"responses": [bash(long_call, "prompt", usage(1201, 41))]})
    env = serve_env(sandbox, receiver)
    with ServeProcess(
        [policy],
        upstream.url,
        env,
        log=sandbox.home / "serve.log",
        args=("--trace-idle-timeout", "2"),
    ) as gateway:
        settings = gateway_settings(gateway.url, with_token=False)
        cmd = [
            str(CLAUDE_BIN),
            "-p",
            "wait",
            "--output-format",
            "stream-json",
            "--verbose",
            "--settings",
            json.dumps(settings),
            "--allowedTools",
            "Bash",
        ]
        proc = subprocess.Popen(
            cmd,
            cwd=sandbox.cwd,
            env=sandbox.env(),
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
        )
        try:
            session = ""
            assert proc.stdout is not None
            for line in proc.stdout:
                message = json.loads(line) if line.startswith(b"{") else {}
                session = session or str(message.get("session_id") or "")
                if message.get("type") == "assistant":
                    break
            time.sleep(1.0)  # PreToolUse reached the gateway; the tool runs
        finally:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()

        def closed(spans: Spans) -> bool:
            return any(
                s["parent_span_id"] is None
                and s["attributes"].get("gen_ai.conversation.id") == session
                for s in spans
            )

        spans = receiver.wait_for(closed, timeout=20)
    trace = trace_of(spans, session)
    root = next(s for s in trace if s["parent_span_id"] is None)
    assert root["attributes"]["agent_gateway.session.idle_closed"] is True
    assert root["attributes"]["agent_gateway.incomplete"] is True
    assert root["status"]["code"] == "STATUS_CODE_ERROR"  # killed in the middle of its turn
    (tool,) = [s for s in trace if s["name"] == "execute_tool Bash"]
    assert tool["attributes"]["agent_gateway.incomplete"] is True
    (turn,) = [s for s in trace if s["name"] == "turn"]
    assert tool["parent_span_id"] == turn["span_id"]
    assert turn["parent_span_id"] == root["span_id"]


CAPTURE = {"OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT": "true"}


def check_content(trace: Spans, *, served: bool) -> None:
    """Content capture on: every message attribute in the conventions' JSON shape."""
    by_id = {s["span_id"]: s for s in trace}
    chats = sorted((s for s in trace if s["name"].startswith("chat ")), key=lambda s: s["start_ns"])
    assert len(chats) == 3
    for chat in chats:
        a = chat["attributes"]
        sent = shapes.input_messages(a["gen_ai.input.messages"])
        (out,) = shapes.output_messages(a["gen_ai.output.messages"])
        assert out["finish_reason"] in ("tool_call", "stop")
        if served:  # the request itself: its system prompt and the tools offered
            assert shapes.system_instructions(a["gen_ai.system_instructions"])
            names = {t["name"] for t in shapes.tool_definitions(a["gen_ai.tool.definitions"])}
            assert "Bash" in names
        texts = [p.get("content", "") for m in sent for p in m["parts"] if p["type"] == "text"]
        assert any("tidy up" in t for t in texts)
    last = shapes.input_messages(chats[-1]["attributes"]["gen_ai.input.messages"])
    calls = [p for m in last for p in m["parts"] if p["type"] == "tool_call"]
    results = [p for m in last for p in m["parts"] if p["type"] == "tool_call_response"]
    assert [c["arguments"]["command"] for c in calls] == ["touch made.txt", "rm victim.txt"]
    assert {r["id"] for r in results} == {c["id"] for c in calls}
    tools = {
        s["attributes"]["gen_ai.tool.call.id"]: s for s in trace if s["name"] == "execute_tool Bash"
    }
    for tool in tools.values():
        a = tool["attributes"]
        assert shapes.arguments(a["gen_ai.tool.call.arguments"])["command"]
        denied = a["agent_gateway.policy.decision"] == "deny"
        assert ("gen_ai.tool.call.result" in a) is not denied  # a result only on success
        assert by_id[tool["parent_span_id"]]["name"] == "turn"
    root = next(s for s in trace if s["parent_span_id"] is None)
    r = root["attributes"]
    (prompt,) = shapes.input_messages(r["gen_ai.input.messages"])
    assert prompt == {"role": "user", "parts": [{"type": "text", "content": "tidy up"}]}
    (answer,) = shapes.output_messages(r["gen_ai.output.messages"])
    assert answer["parts"] == [{"type": "text", "content": "All done."}]
    assert answer["finish_reason"] == "stop"
    # OpenInference: the root's input and output as text, the session for Langfuse
    assert r["input.value"] == "tidy up" and r["output.value"] == "All done."
    assert r["session.id"] == r["gen_ai.conversation.id"]
    assert {s["attributes"]["openinference.span.kind"] for s in trace} == {
        "AGENT",
        "CHAIN",
        "LLM",
        "TOOL",
    }


def test_content_capture_follows_the_conventions_in_both_modes(
    sandbox: Sandbox, scripted: Scripted, receiver: OtlpReceiver, policy: str
) -> None:
    scripted(TOOLS_AND_DENIAL)
    env = sandbox.env(**otlp(receiver), **CAPTURE)
    out = gateway_run(sandbox, "tidy up", "--policy", policy, "--allowed-tools", "Bash", env=env)
    assert out.results, out.stderr[-3000:]
    wrapped = trace_of(receiver.wait_for(lambda s: True, timeout=1), out.session_id)
    check_content(wrapped, served=False)
    upstream = scripted(TOOLS_AND_DENIAL)
    with ServeProcess(
        [policy],
        upstream.url,
        serve_env(sandbox, receiver, **CAPTURE),
        log=sandbox.home / "serve.log",
    ) as gateway:
        served_out = run_served(sandbox, gateway.url, "tidy up", "--allowedTools", "Bash")
        served = wait_complete(receiver, served_out.session_id, len(wrapped))
    check_content(served, served=True)
