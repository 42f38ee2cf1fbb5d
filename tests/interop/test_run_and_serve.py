"""One session, two vantage points, one trace: the same scripted sessions through
`agent-gateway run` and behind `agent-gateway serve` (http hooks and the Messages API proxy) on
the real Claude Code, with content capture on, compared from the OTLP bytes.

Both trees must have the same spans with the same names, kinds, parents, statuses, message
shapes, tool results, token usage and cost, and each trace's chats must add up to Claude Code's
`total_cost_usd`. Message shapes are compared without what only the request shows (serve reads
it; run rebuilds the conversation from the stream): Claude Code's `<system-reminder>` parts
and its system-role messages.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import pytest

from gateway.scripted import ScriptedServer
from tests.e2e.harness import RunOutcome, Sandbox, gateway_run
from tests.e2e.test_trace_parity import (
    CAPTURE,
    ERROR_RESULT,
    POLICY,
    SUBAGENT,
    bash,
    otlp,
    run_served,
    serve_env,
    trace_of,
    usage,
    wait_complete,
)
from tests.otlp_receiver import OtlpReceiver, Spans
from tests.server.processes import ServeProcess

pytestmark = pytest.mark.e2e
Span = dict[str, Any]
Scripted = Callable[[dict[str, Any]], ScriptedServer]

TOOLS = {
    "responses": [
        bash("echo listed", "prompt", usage(1201, 41)),
        bash("rm -rf build", "tool_result", usage(1302, 42)),
        bash("ls /no/such/dir", "tool_result", usage(1403, 43)),
        {"when": "tool_result", "text": "One denied, one failed.", "usage": usage(1504, 44)},
    ]
}
COMPACTION = {
    "responses": [
        bash("echo step0 > log.txt", "prompt", usage(1201, 41)),
        *[bash(f"echo step{n} >> log.txt", "tool_result", usage(1201, 41)) for n in range(1, 6)],
        bash("echo big >> log.txt", "tool_result", {"input_tokens": 150_000, "output_tokens": 40}),
        {
            "when": "compaction",
            "text": "<analysis>ok</analysis><summary>Work so far.</summary>",
            "times": 0,
            "usage": {"input_tokens": 3000, "output_tokens": 100},
        },
        {"when": "tool_result", "text": "All steps done.", "usage": usage(1301, 31)},
    ]
}


@dataclass(frozen=True)
class Session:
    scenario: dict[str, Any]
    prompt: str
    args: tuple[str, ...]

    @property
    def claude_args(self) -> tuple[str, ...]:
        return tuple("--allowedTools" if a == "--allowed-tools" else a for a in self.args)


SESSIONS = {
    "tools-deny-failure": Session(TOOLS, "clean up the build", ("--allowed-tools", "Bash")),
    "subagent": Session(
        SUBAGENT, "delegate", ("--allowed-tools", "Bash,Task", "--max-turns", "8")
    ),
    "max-turns": Session(ERROR_RESULT, "loop", ("--allowed-tools", "Bash", "--max-turns", "1")),
    "compaction": Session(
        COMPACTION, "work through the steps", ("--allowed-tools", "Bash", "--autocompact", "100000")
    ),
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


def both_ways(
    session: Session, sandbox: Sandbox, scripted: Scripted, receiver: OtlpReceiver, policy: str
) -> tuple[tuple[RunOutcome, Spans], tuple[RunOutcome, Spans]]:
    scripted(session.scenario)
    env = sandbox.env(**otlp(receiver), **CAPTURE)
    wrapped_out = gateway_run(sandbox, session.prompt, "--policy", policy, *session.args, env=env)
    assert wrapped_out.results, wrapped_out.stderr[-3000:]
    wrapped = trace_of(receiver.wait_for(lambda s: True, timeout=1), wrapped_out.session_id)
    upstream = scripted(session.scenario)  # the same answers, from the start again
    with ServeProcess(
        [policy], upstream.url, serve_env(sandbox, receiver, **CAPTURE),
        log=sandbox.home / "serve.log",
    ) as gateway:
        served_out = run_served(sandbox, gateway.url, session.prompt, *session.claude_args)
        served = wait_complete(receiver, served_out.session_id, len(wrapped))
    return (wrapped_out, wrapped), (served_out, served)


# --- what is compared --------------------------------------------------------------------------
COMPARED = (
    "gen_ai.operation.name",
    "gen_ai.agent.name",
    "gen_ai.tool.name",
    "gen_ai.usage.input_tokens",
    "gen_ai.usage.output_tokens",
    "gen_ai.usage.cache_read.input_tokens",
    "gen_ai.usage.cache_creation.input_tokens",
    "gen_ai.response.finish_reasons",
    "gen_ai.tool.call.result",
    "agent_gateway.policy.decision",
    "agent_gateway.policy.rule_id",
    "agent_gateway.tool.is_error",
    "agent_gateway.turn.index",
    "agent_gateway.compaction.trigger",
    "openinference.span.kind",
    "input.mime_type",
    "output.mime_type",
)
SHAPED = ("gen_ai.input.messages", "gen_ai.output.messages")


def shape(raw: str) -> tuple[tuple[str, tuple[str, ...]], ...]:
    """Roles and part types, without Claude Code's system reminders and system messages (in
    the request only; a task notification is a reminder the model reads as the user's turn)."""
    out = []
    for message in json.loads(raw):
        if message["role"] == "system":
            continue
        parts = [
            p for p in message["parts"]
            if not (p["type"] == "text" and p["content"].lstrip().startswith("<system-reminder>")
                    and "<task-notification>" not in p["content"])
        ]
        if not parts:
            continue
        role = message["role"]
        if role == "user" and all(p["type"] == "tool_call_response" for p in parts):
            role = "tool"
        out.append((role, tuple(p["type"] for p in parts)))
    return tuple(out)


def signature(span: Span, parent: Span | None) -> tuple[Any, ...]:
    a = dict(span["attributes"])
    in_compaction = parent is not None and parent["name"] == "compaction"
    if in_compaction:  # run knows the summary request's tokens, not its messages or response
        for key in (*SHAPED, "gen_ai.response.finish_reasons", "input.mime_type",
                    "output.mime_type"):
            a.pop(key, None)
    compared = tuple((k, _plain(a[k])) for k in COMPARED if k in a)
    shapes = tuple((k, shape(a[k])) for k in SHAPED if k in a)
    cost = a.get("gen_ai.usage.cost")
    return (
        span["name"], span["kind"], span["status"]["code"], "error.type" in a,
        tuple(sorted(e["name"] for e in span["events"])), compared, shapes,
        round(cost, 9) if cost is not None else None,
    )


_RUN_IDS = re.compile(r"\ba[0-9a-f]{16}\b|[0-9a-f]{8}(-[0-9a-f]{4}){3}-[0-9a-f]{12}")


def _plain(value: Any) -> Any:
    """A value as compared: a subagent's id and a session id differ from one run to the next."""
    if isinstance(value, str):
        return _RUN_IDS.sub("<id>", value)
    return tuple(value) if isinstance(value, list) else value


def paths(trace: Spans) -> Counter[tuple[Any, ...]]:
    by_id = {s["span_id"]: s for s in trace}
    out: Counter[tuple[Any, ...]] = Counter()
    for span in trace:
        chain, node = [], span
        while node is not None:
            parent = by_id.get(node["parent_span_id"])
            chain.append(signature(node, parent))
            node = parent
        out[tuple(reversed(chain))] += 1
    return out


def total_cost(trace: Spans) -> float:
    return sum(s["attributes"].get("gen_ai.usage.cost", 0.0) for s in trace
               if s["name"].startswith("chat "))


def root_of(trace: Spans) -> Span:
    (root,) = [s for s in trace if s["parent_span_id"] is None]
    return root


def chats(trace: Spans) -> list[Span]:
    return sorted((s for s in trace if s["name"].startswith("chat ")), key=lambda s: s["start_ns"])


def check_common(trace: Spans, outcome: RunOutcome, prompt: str) -> None:
    """What holds in every session, in either mode."""
    # the trace's chats add up to what Claude Code charged, compaction included
    assert total_cost(trace) == pytest.approx(outcome.result["total_cost_usd"], abs=1e-6)
    root = root_of(trace)
    # the user's first prompt, as the root's input
    assert root["attributes"]["input.value"] == prompt
    assert shape(root["attributes"]["gen_ai.input.messages"]) == (("user", ("text",)),)
    by_id = {s["span_id"]: s for s in trace}
    for span in trace:
        a = span["attributes"]
        kind = a["openinference.span.kind"]
        if kind == "LLM" and by_id[span["parent_span_id"]]["name"] != "compaction":
            assert a["input.mime_type"] == a["output.mime_type"] == "application/json"
            assert json.loads(a["input.value"]) and json.loads(a["output.value"])
        if kind == "TOOL":
            assert json.loads(a["input.value"]) == json.loads(a["gen_ai.tool.call.arguments"])
            if "gen_ai.tool.call.result" in a:
                assert a["output.value"] == a["gen_ai.tool.call.result"]
                assert isinstance(a["gen_ai.tool.call.result"], str)
        if span["status"]["code"] == "STATUS_CODE_ERROR":
            assert a.get("error.type"), span["name"]


def check_session(name: str, trace: Spans, outcome: RunOutcome) -> None:
    """The points each session is there for."""
    by_name: dict[str, list[Span]] = {}
    for span in trace:
        by_name.setdefault(span["name"], []).append(span)
    root = root_of(trace)
    if name == "tools-deny-failure":
        results = {
            json.loads(s["attributes"]["gen_ai.tool.call.arguments"])["command"]:
            s["attributes"].get("gen_ai.tool.call.result")
            for s in by_name["execute_tool Bash"]
        }
        assert results == {"echo listed": "listed", "rm -rf build": None,
                           "ls /no/such/dir": None}
        assert root["status"]["code"] == "STATUS_CODE_OK"
    if name == "subagent":
        (agent,) = by_name["invoke_agent general-purpose"]
        a = agent["attributes"]
        assert a["input.value"] == "Write a marker file." and a["output.value"] == "Two done."
        assert shape(a["gen_ai.input.messages"]) == (("user", ("text",)),)
        (call,) = by_name["execute_tool Agent"]
        assert call["attributes"]["gen_ai.tool.call.result"].startswith("Async agent launched")
        # the last chat's input ends with the task notification that led to the final answer
        main = [c for c in chats(trace) if "agent_gateway.parent_tool_use_id" not in
                c["attributes"]]
        last = json.loads(main[-1]["attributes"]["gen_ai.input.messages"])[-1]
        assert last["role"] == "user"
        assert "<task-notification>" in last["parts"][-1]["content"]
        assert "<task-notification>" not in root["attributes"]["input.value"]
    if name == "max-turns":
        assert root["status"]["code"] == "STATUS_CODE_ERROR"
        assert root["attributes"]["error.type"] in ("error_max_turns", "incomplete")
    if name == "compaction":
        (comp,) = by_name["compaction"]
        (chat,) = [s for s in trace if s["parent_span_id"] == comp["span_id"]]
        a = chat["attributes"]
        assert a["gen_ai.usage.input_tokens"] == 3000 and a["gen_ai.usage.output_tokens"] == 100
        assert a["gen_ai.usage.cost"] == pytest.approx((3000 * 4 + 100 * 20) / 1e6)
        # after it, the conversation is the summary and what it kept verbatim
        after = [c for c in chats(trace) if c["start_ns"] > comp["end_ns"]]
        assert shape(after[-1]["attributes"]["gen_ai.input.messages"]) == (
            ("user", ("text",)), ("assistant", ("text", "tool_call")),
            ("tool", ("tool_call_response",)),
        )


@pytest.mark.parametrize("name", sorted(SESSIONS))
def test_the_same_session_reads_the_same_in_run_and_serve(
    name: str, sandbox: Sandbox, scripted: Scripted, receiver: OtlpReceiver, policy: str
) -> None:
    session = SESSIONS[name]
    (wrapped_out, wrapped), (served_out, served) = both_ways(
        session, sandbox, scripted, receiver, policy
    )
    mine, theirs = paths(wrapped), paths(served)
    assert not mine - theirs, f"only in run: {sorted(mine - theirs)}"
    assert not theirs - mine, f"only behind serve: {sorted(theirs - mine)}"
    for outcome, trace in ((wrapped_out, wrapped), (served_out, served)):
        check_common(trace, outcome, session.prompt)
        check_session(name, trace, outcome)


# --- the SDK's own settings, in both modes -------------------------------------------------------
QUIET = re.compile(r"\b40[45]\b|unreachable|dropped|Failed to export|Traceback")
"""What a report of trouble with the backend says (a port number such as 40451 is not one)."""


def test_a_trace_only_backend_gets_the_trace_and_nothing_is_reported(
    sandbox: Sandbox, scripted: Scripted, policy: str
) -> None:
    """As docs/tracing.md shows it: one endpoint, nothing else. Logs and metrics stay off, so
    a backend that takes only traces answers nothing with 404 and nothing is printed."""
    session = SESSIONS["tools-deny-failure"]
    with OtlpReceiver(signals=("traces",)) as backend:
        endpoint = {"OTEL_EXPORTER_OTLP_ENDPOINT": backend.endpoint}
        scripted(session.scenario)
        env = {k: v for k, v in sandbox.env(**endpoint).items() if k != "OTEL_TRACES_EXPORTER"}
        out = gateway_run(sandbox, session.prompt, "--policy", policy, *session.args, env=env)
        assert trace_of(backend.spans, out.session_id)
        assert not QUIET.search(out.stderr), out.stderr
        upstream = scripted(session.scenario)
        env = serve_env(sandbox, backend)
        del env["OTEL_TRACES_EXPORTER"]
        log = sandbox.home / "serve.log"
        with ServeProcess([policy], upstream.url, env, log=log) as gateway:
            served = run_served(sandbox, gateway.url, session.prompt, *session.claude_args)
            wait_complete(backend, served.session_id, 1)
        said = log.read_text()
        assert not QUIET.search(said), said


def test_a_slow_backend_within_the_export_timeout_loses_nothing_and_nothing_is_reported(
    sandbox: Sandbox, scripted: Scripted, policy: str
) -> None:
    """It stores every span at once and answers 4 s later, within OTEL_EXPORTER_OTLP_TIMEOUT
    (6 s): the final flush at exit waits for it, so nothing is lost or said to be."""
    session = SESSIONS["tools-deny-failure"]
    timeout = {"OTEL_EXPORTER_OTLP_TIMEOUT": "6"}
    with OtlpReceiver(answer_after_s=4.0) as backend:
        scripted(session.scenario)
        env = {**sandbox.env(**otlp(backend), **timeout), "OTEL_BSP_SCHEDULE_DELAY": "5000"}
        out = gateway_run(sandbox, session.prompt, "--policy", policy, *session.args, env=env)
        assert out.results, out.stderr[-2000:]
        trace = trace_of(backend.spans, out.session_id)  # all of it, root included
        assert len(trace) == 12, [s["name"] for s in trace]
        assert not QUIET.search(out.stderr), out.stderr
        assert "may have arrived" not in out.stderr and "lost" not in out.stderr, out.stderr
        # behind serve, its spans as they come and what is left at its exit
        upstream = scripted(session.scenario)
        env = serve_env(sandbox, backend, **timeout)
        log = sandbox.home / "serve.log"
        with ServeProcess([policy], upstream.url, env, log=log) as gateway:
            served = run_served(sandbox, gateway.url, session.prompt, *session.claude_args)
            assert served.results
        assert len(trace_of(backend.spans, served.session_id)) == len(trace)
        said = log.read_text()
        assert not QUIET.search(said), said
        assert "may have arrived" not in said and "lost" not in said, said


def test_a_callers_unsampled_traceparent_and_the_sdk_sampler_are_honoured(
    sandbox: Sandbox, scripted: Scripted, receiver: OtlpReceiver, policy: str
) -> None:
    session = SESSIONS["tools-deny-failure"]
    scripted(session.scenario)
    caller = "0af7651916cd43dd8448eb211c80319c", "b7ad6b7169203331"
    for flags, exported in (("00", False), ("01", True)):
        receiver.clear()
        env = sandbox.env(**otlp(receiver), TRACEPARENT=f"00-{caller[0]}-{caller[1]}-{flags}",
                          OTEL_SPAN_ATTRIBUTE_COUNT_LIMIT="12")
        out = gateway_run(sandbox, session.prompt, "--policy", policy, *session.args, env=env)
        assert out.results, out.stderr[-2000:]
        spans = receiver.spans  # the run flushed before it exited
        assert bool(spans) is exported
        if exported:
            (root,) = [s for s in spans if s["name"] == "invoke_agent claude-code"]
            assert (root["trace_id"], root["parent_span_id"]) == caller
            assert max(len(s["attributes"]) for s in spans) == 12  # the SDK's span limits
    # behind serve, OTEL_TRACES_SAMPLER decides each session's trace
    receiver.clear()
    upstream = scripted(session.scenario)
    env = serve_env(sandbox, receiver, OTEL_TRACES_SAMPLER="always_off")
    with ServeProcess([policy], upstream.url, env, log=sandbox.home / "serve.log") as gateway:
        served = run_served(sandbox, gateway.url, session.prompt, *session.claude_args)
        assert served.results
    assert receiver.spans == []
