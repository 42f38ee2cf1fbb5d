"""Traces of `agent-gateway run` around the real Claude Code, received over OTLP/HTTP.

Every test runs the bundled Claude Code against the scripted Messages API with distinctive
token numbers, exports the gateway's spans to tests/otlp_receiver.py (protobuf decoded) and
checks them against what the scripted server recorded and what the result message reported.
"""

from __future__ import annotations

import socket
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from gateway.scripted import ScriptedServer
from gateway.scripted.scenario import ScriptedResponse
from gateway.scripted.server import RecordedRequest
from gateway.telemetry.pricing import Usage as PriceUsage
from gateway.telemetry.pricing import load_price_table
from tests.e2e.harness import RunOutcome, Sandbox, gateway_run
from tests.otlp_receiver import OtlpReceiver, Spans

pytestmark = pytest.mark.e2e
Scripted = Callable[[dict[str, Any]], ScriptedServer]
Span = dict[str, Any]

ROOT = "invoke_agent claude-code"
TOOL_USE_ID = "gen_ai.tool.call.id"
RESPONSE_ID = "gen_ai.response.id"
CONVERSATION = "gen_ai.conversation.id"
OK_STATUSES = ("STATUS_CODE_UNSET", "STATUS_CODE_OK")
SUBAGENT_TOOLS = ("execute_tool Task", "execute_tool Agent")


def usage(inp: int, out: int, cache_read: int, cache_creation: int) -> dict[str, int]:
    return {
        "input_tokens": inp,
        "output_tokens": out,
        "cache_read_input_tokens": cache_read,
        "cache_creation_input_tokens": cache_creation,
    }


def tool(name: str, tool_input: dict[str, Any], when: str, use: dict[str, int]) -> dict[str, Any]:
    return {
        "when": when,
        "text": f"Calling {name}.",
        "tool_use": [{"name": name, "input": tool_input}],
        "usage": use,
    }


def bash(command: str, when: str, use: dict[str, int]) -> dict[str, Any]:
    return tool("Bash", {"command": command}, when, use)


# --- fixtures and run helpers ----------------------------------------------------------------


@pytest.fixture
def receiver() -> Iterator[OtlpReceiver]:
    with OtlpReceiver() as r:
        yield r


def otlp_env(sandbox: Sandbox, endpoint: str, **extra: str) -> dict[str, str]:
    return sandbox.env(
        OTEL_TRACES_EXPORTER="otlp",
        OTEL_EXPORTER_OTLP_ENDPOINT=endpoint,
        OTEL_EXPORTER_OTLP_PROTOCOL="http/protobuf",
        **extra,
    )


def roots_of(spans: Spans, session_id: str) -> list[Span]:
    return [
        s for s in spans if s["name"] == ROOT and s["attributes"].get(CONVERSATION) == session_id
    ]


def traced_run(
    sandbox: Sandbox,
    receiver: OtlpReceiver,
    prompt: str,
    *args: str,
    env: dict[str, str] | None = None,
) -> tuple[RunOutcome, Span, Spans]:
    """Run through the gateway; return the outcome, its root span and every span of its trace."""
    receiver.clear()
    out = gateway_run(sandbox, prompt, *args, env=env or otlp_env(sandbox, receiver.endpoint))
    assert out.results, f"rc={out.returncode} stderr: {out.stderr[-3000:]}"
    sid = out.session_id
    # The gateway flushes before it exits: the root is already there, never merely "eventually".
    spans = receiver.wait_for(lambda got: len(roots_of(got, sid)) == 1, timeout=2)
    (root,) = roots_of(spans, sid)
    trace = [s for s in spans if s["trace_id"] == root["trace_id"]]
    return out, root, trace


def by_name(spans: Spans, prefix: str) -> list[Span]:
    return [s for s in spans if s["name"].split(" ")[0] == prefix]


def children(spans: Spans, parent: Span) -> list[Span]:
    return [s for s in spans if s["parent_span_id"] == parent["span_id"]]


def scripted_response(server: ScriptedServer, request: RecordedRequest) -> ScriptedResponse:
    if request.response_index == -1:
        assert server.scenario.default is not None
        return server.scenario.default
    return server.scenario.responses[request.response_index]


def assert_tree(trace: Spans, root: Span) -> None:
    """invoke_agent > turn > chat / execute_tool (subagent work under its Task/Agent span)."""
    ids = {s["span_id"]: s for s in trace}
    assert len(ids) == len(trace), "span ids are unique"
    assert [s for s in trace if s["parent_span_id"] not in ids] == [root]
    for span in trace:
        assert span["start_ns"] <= span["end_ns"], span["name"]
        if span is root:
            continue
        parent = ids.get(span["parent_span_id"])
        assert parent is not None, f"{span['name']} has no parent in the trace"
        op = span["name"].split(" ")[0]
        if op == "compaction":
            assert parent is root, span["name"]
        elif op == "invoke_agent":  # a subagent, inside the Task/Agent call that started it
            assert parent["name"] in SUBAGENT_TOOLS, parent["name"]
        elif op == "turn":  # the main agent's turns, or a subagent's inside its invoke_agent
            assert parent is root or parent["name"].startswith("invoke_agent"), parent["name"]
        elif op == "chat":  # a response in its turn, or a compaction's own summary request
            where = f"{span['name']} under {parent['name']}"
            assert parent["name"] in ("turn", "compaction"), where
        elif op == "execute_tool":
            assert parent["name"] == "turn", f"{span['name']} under {parent['name']}"
        # children lie within their parent's time (1 ms slack for clock rounding)
        assert parent["start_ns"] - 1_000_000 <= span["start_ns"], span["name"]
        assert span["end_ns"] <= parent["end_ns"] + 1_000_000, span["name"]


def assert_chats_match_server(trace: Spans, server: ScriptedServer) -> list[Span]:
    """Exactly one chat span per answered API response, with its scripted numbers.

    A subagent's responses never reach the partial stream on Claude Code 2.1.332 (no
    stream_event lines carry a parent_tool_use_id): the AssistantMessage has only
    message_start's placeholder (output_tokens 1, no stop reason). Their final output tokens
    and stop reason come from the subagent's transcript, read when the run ends.
    """
    answered = [r for r in server.requests if r.status == 200]
    chats = by_name(trace, "chat")
    assert sorted(c["attributes"][RESPONSE_ID] for c in chats) == sorted(
        r.message_id for r in answered
    )
    for request in answered:
        (chat,) = [c for c in chats if c["attributes"][RESPONSE_ID] == request.message_id]
        scripted = scripted_response(server, request)
        u, a = scripted.usage, chat["attributes"]
        assert chat["name"] == f"chat {server.scenario.model}"
        assert a["gen_ai.operation.name"] == "chat"
        assert a["gen_ai.provider.name"] == "anthropic"
        assert a["gen_ai.request.model"] == a["gen_ai.response.model"] == server.scenario.model
        assert a["gen_ai.usage.input_tokens"] == (
            u.input_tokens + u.cache_read_input_tokens + u.cache_creation_input_tokens
        )
        assert a["gen_ai.usage.cache_read.input_tokens"] == u.cache_read_input_tokens
        assert a["gen_ai.usage.cache_creation.input_tokens"] == u.cache_creation_input_tokens
        if request.is_subagent:
            assert a["agent_gateway.chat.usage_source"] == "transcript"
            assert a["agent_gateway.parent_tool_use_id"]
        else:
            assert a["agent_gateway.chat.usage_source"] == "stream"
        assert a["gen_ai.usage.output_tokens"] == u.output_tokens
        assert a["gen_ai.response.finish_reasons"] == [scripted.effective_stop_reason]
        assert a["gen_ai.usage.cost"] > 0
        assert chat["kind"] == "SPAN_KIND_CLIENT"
        assert chat["status"]["code"] in OK_STATUSES
    return chats


def assert_cost_adds_up(trace: Spans, root: Span, out: RunOutcome) -> None:
    a = root["attributes"]
    chat_sum = sum(c["attributes"]["gen_ai.usage.cost"] for c in by_name(trace, "chat"))
    assert a["agent_gateway.result.total_cost_usd"] == pytest.approx(out.result["total_cost_usd"])
    assert a["agent_gateway.cost.chat_sum_usd"] == pytest.approx(chat_sum, abs=1e-12)
    assert chat_sum == pytest.approx(out.result["total_cost_usd"], abs=1e-9)
    assert abs(a["agent_gateway.cost.difference_usd"]) < 1e-9
    assert a["agent_gateway.cost.unpriced_chats"] == 0


def tool_uses(out: RunOutcome, parent_tool_use_id: str | None = None) -> list[dict[str, Any]]:
    """tool_use blocks the stream carried (main agent, or one subagent)."""
    return [
        block
        for m in out.messages
        if m.get("type") == "assistant" and m.get("parent_tool_use_id") == parent_tool_use_id
        for block in m["message"]["content"]
        if block.get("type") == "tool_use"
    ]


# --- tests -------------------------------------------------------------------------------------


def test_multi_turn_trace_tree_tokens_tools_turns_and_cost(
    sandbox: Sandbox, scripted: Scripted, receiver: OtlpReceiver
) -> None:
    server = scripted(
        {
            "responses": [
                {
                    "when": "prompt",
                    "text": "Two at once.",
                    "tool_use": [
                        {"name": "Bash", "input": {"command": "echo one > one.txt"}},
                        {"name": "Bash", "input": {"command": "echo two > two.txt"}},
                    ],
                    "usage": usage(1311, 71, 313, 31),
                },
                bash("cat one.txt two.txt > both.txt", "tool_result", usage(2322, 82, 424, 42)),
                {
                    "when": "tool_result",
                    "text": "All three files.",
                    "usage": usage(3333, 93, 535, 53),
                },
            ]
        }
    )
    out, root, trace = traced_run(sandbox, receiver, "make files", "--allowed-tools", "Bash")

    assert out.returncode == 0, out.stderr
    assert (sandbox.cwd / "both.txt").read_text() == "one\ntwo\n"
    assert_tree(trace, root)
    chats = assert_chats_match_server(trace, server)
    assert len(chats) == 3
    # root: the result, as Claude Code reported it
    a = root["attributes"]
    assert root["parent_span_id"] is None
    assert root["status"]["code"] in OK_STATUSES
    assert a["gen_ai.operation.name"] == "invoke_agent"
    assert a["gen_ai.provider.name"] == "anthropic"
    assert a["gen_ai.agent.name"] == "claude-code"
    assert a[CONVERSATION] == out.session_id
    assert a["agent_gateway.result.subtype"] == "success"
    assert a["agent_gateway.result.is_error"] is False
    # Claude Code 2.1.332 counts a turn per tool_result message plus one: two parallel tool
    # calls in one response make num_turns 4 for 3 model responses.
    assert a["agent_gateway.result.num_turns"] == out.result["num_turns"] == 4
    assert a["agent_gateway.result.terminal_reason"] == out.result["terminal_reason"]
    assert a["gen_ai.response.finish_reasons"] == ["end_turn"]
    assert a["agent_gateway.result.usage.input_tokens"] == 1311 + 2322 + 3333
    assert a["agent_gateway.result.usage.output_tokens"] == 71 + 82 + 93
    assert a["agent_gateway.result.usage.cache_read_input_tokens"] == 313 + 424 + 535
    assert a["agent_gateway.result.usage.cache_creation_input_tokens"] == 31 + 42 + 53
    assert a["agent_gateway.result.permission_denials"] == 0
    assert_cost_adds_up(trace, root, out)
    # turns: one per model response of the main agent (the seed's turn), each with its one chat;
    # consistent with num_turns = 1 + tool results fed back
    turns = sorted(children(trace, root), key=lambda s: s["attributes"]["agent_gateway.turn.index"])
    assert [t["name"] for t in turns] == ["turn"] * len(server.requests)
    tool_calls = [t["attributes"]["agent_gateway.turn.tool_calls"] for t in turns]
    assert out.result["num_turns"] == 1 + sum(tool_calls)
    assert [t["attributes"]["agent_gateway.turn.index"] for t in turns] == [1, 2, 3]
    assert [t["attributes"]["agent_gateway.turn.tool_calls"] for t in turns] == [2, 1, 0]
    for turn, request in zip(turns, server.requests, strict=True):
        (chat,) = by_name(children(trace, turn), "chat")
        assert chat["attributes"][RESPONSE_ID] == request.message_id
        assert turn["attributes"]["agent_gateway.turn.cost_usd"] == pytest.approx(
            chat["attributes"]["gen_ai.usage.cost"]
        )
    # tools: one execute_tool span per tool_use, in the turn that asked for it
    uses = tool_uses(out)
    tools = by_name(trace, "execute_tool")
    assert len(uses) == 3
    assert sorted(t["attributes"][TOOL_USE_ID] for t in tools) == sorted(u["id"] for u in uses)
    first_cost = by_name(children(trace, turns[0]), "chat")[0]["attributes"]["gen_ai.usage.cost"]
    for span in tools:
        t = span["attributes"]
        assert span["name"] == "execute_tool Bash"
        assert t["gen_ai.operation.name"] == "execute_tool"
        assert t["gen_ai.tool.name"] == "Bash"
        assert t["gen_ai.tool.type"] == "function"
        assert t["agent_gateway.tool.is_error"] is False
        assert t["agent_gateway.policy.decision"] == "abstain"  # no --policy: nothing decided
        assert span["status"]["code"] in OK_STATUSES
        assert span["end_ns"] > span["start_ns"]
    assert {
        t["attributes"][TOOL_USE_ID] for t in by_name(children(trace, turns[0]), "execute_tool")
    } == {u["id"] for u in uses[:2]}
    for span in by_name(children(trace, turns[0]), "execute_tool"):
        assert span["attributes"]["agent_gateway.tool.split_cost_usd"] == pytest.approx(
            first_cost / 2
        )
    # content capture is off by default
    assert not any(
        k.startswith(("gen_ai.input", "gen_ai.output", "gen_ai.tool.call.arguments"))
        for s in trace
        for k in s["attributes"]
    )
    assert root["resource"].get("service.name")


POLICY = """\
version: 1
name: tracing
permissions:
  allow:
    - Bash(echo:*)
rules:
  - id: no-shred
    reason: Shredding is reserved for humans.
    tool: Bash
    command: "shred:*"
"""


def test_policy_decisions_on_tool_spans_denied_call_is_an_event_with_rule_id(
    sandbox: Sandbox, scripted: Scripted, receiver: OtlpReceiver
) -> None:
    precious = sandbox.cwd / "precious.txt"
    precious.write_text("keep me\n")
    server = scripted(
        {
            "responses": [
                bash("shred -u precious.txt", "prompt", usage(1411, 61, 141, 14)),
                bash("echo allowed > allowed.txt", "tool_result", usage(2411, 62, 241, 24)),
                {"when": "tool_result", "text": "finished", "usage": usage(3411, 63, 341, 34)},
            ]
        }
    )
    policy = sandbox.cwd.parent / "policy.yaml"
    policy.write_text(POLICY)
    out, root, trace = traced_run(sandbox, receiver, "clean up", "--policy", str(policy))

    assert out.returncode == 0, out.stderr
    assert precious.read_text() == "keep me\n"  # the denied call never ran
    assert (sandbox.cwd / "allowed.txt").read_text() == "allowed\n"
    assert_tree(trace, root)
    assert_chats_match_server(trace, server)
    assert_cost_adds_up(trace, root, out)
    denied_use, allowed_use = tool_uses(out)
    tools = {t["attributes"][TOOL_USE_ID]: t for t in by_name(trace, "execute_tool")}
    assert set(tools) == {denied_use["id"], allowed_use["id"]}

    denied = tools[denied_use["id"]]
    # a deny is the gateway doing its job: not an error; the rule is on an event
    assert denied["status"]["code"] == "STATUS_CODE_UNSET"
    (event,) = denied["events"]
    assert event["name"] == "agent_gateway.policy.deny"
    assert event["attributes"]["agent_gateway.policy.rule_id"].endswith("no-shred")
    assert "reserved for humans" in event["attributes"]["agent_gateway.policy.reason"]
    assert "error.type" not in denied["attributes"]
    assert root["status"]["code"] == "STATUS_CODE_OK"
    d = denied["attributes"]
    assert d["agent_gateway.policy.decision"] == "deny"
    assert d["agent_gateway.policy.rule_id"].endswith("no-shred")
    assert "reserved for humans" in d["agent_gateway.policy.reason"]
    assert d["agent_gateway.tool.is_error"] is True

    allowed = tools[allowed_use["id"]]
    assert allowed["status"]["code"] in OK_STATUSES
    a = allowed["attributes"]
    assert a["agent_gateway.policy.decision"] == "allow"
    assert a["agent_gateway.policy.rule_id"].endswith("permissions.allow[1]")  # file:rule
    assert a["agent_gateway.tool.is_error"] is False
    assert root["attributes"]["agent_gateway.result.permission_denials"] == 1


def test_error_max_turns_on_the_root(
    sandbox: Sandbox, scripted: Scripted, receiver: OtlpReceiver
) -> None:
    server = scripted(
        {"responses": [{**bash("echo again", "any", usage(1511, 51, 151, 15)), "times": 0}]}
    )
    out, root, trace = traced_run(
        sandbox, receiver, "loop", "--max-turns", "1", "--allowed-tools", "Bash"
    )

    assert out.returncode == 1
    assert out.result["subtype"] == "error_max_turns"
    assert root["status"]["code"] == "STATUS_CODE_ERROR"
    assert "error_max_turns" in root["status"]["message"]
    a = root["attributes"]
    assert a["agent_gateway.result.subtype"] == "error_max_turns"
    assert a["agent_gateway.result.is_error"] is True
    assert a["agent_gateway.result.terminal_reason"] == out.result["terminal_reason"] == "max_turns"
    assert a["agent_gateway.result.num_turns"] == out.result["num_turns"]
    assert_tree(trace, root)
    assert len(assert_chats_match_server(trace, server)) == len(server.requests) == 1
    assert len(by_name(trace, "turn")) == 1
    assert len(by_name(trace, "execute_tool")) == 1
    assert_cost_adds_up(trace, root, out)


def test_error_max_budget_usd_on_the_root(
    sandbox: Sandbox, scripted: Scripted, receiver: OtlpReceiver
) -> None:
    heavy = usage(50_111, 2_011, 1_111, 511)
    server = scripted({"responses": [{**bash("echo spend", "any", heavy), "times": 0}]})
    out, root, trace = traced_run(
        sandbox, receiver, "spend", "--max-budget-usd", "0.01", "--allowed-tools", "Bash"
    )

    assert out.returncode == 1
    assert out.result["subtype"] == "error_max_budget_usd"
    assert root["status"]["code"] == "STATUS_CODE_ERROR"
    assert "error_max_budget_usd" in root["status"]["message"]
    a = root["attributes"]
    assert a["agent_gateway.result.subtype"] == "error_max_budget_usd"
    assert a["agent_gateway.result.is_error"] is True
    assert a["agent_gateway.result.terminal_reason"] == out.result["terminal_reason"]
    assert a["agent_gateway.result.total_cost_usd"] >= 0.01
    assert_tree(trace, root)
    assert len(assert_chats_match_server(trace, server)) == len(server.requests) == 1
    assert_cost_adds_up(trace, root, out)


def test_manual_compaction_span_with_trigger_tokens_and_archive_id(
    sandbox: Sandbox, scripted: Scripted, receiver: OtlpReceiver
) -> None:
    server = scripted(
        {
            "responses": [
                {
                    "when": "prompt",
                    "text": "Hello there, a long enough answer to summarise later on.",
                    "usage": usage(1611, 66, 161, 16),
                },
                {
                    "when": "compaction",
                    "text": "<summary>The user said hello; the assistant greeted back.</summary>",
                    "usage": usage(1711, 77, 171, 17),
                },
            ]
        }
    )
    first, first_root, _ = traced_run(sandbox, receiver, "say hello")
    assert first.returncode == 0, first.stderr
    sid = first.session_id

    out, root, trace = traced_run(sandbox, receiver, "/compact", "--resume", sid)
    assert out.returncode == 0, out.stderr
    boundary = [m for m in out.messages if m.get("subtype") == "compact_boundary"]
    assert len(boundary) == 1, out.stdout[-3000:]
    meta = boundary[0]["compact_metadata"]
    assert root["trace_id"] != first_root["trace_id"]  # one trace per run
    assert_tree(trace, root)

    (comp,) = by_name(trace, "compaction")
    assert comp["parent_span_id"] == root["span_id"]
    assert comp["status"]["code"] in OK_STATUSES
    c = comp["attributes"]
    assert c["agent_gateway.compaction.trigger"] == meta["trigger"] == "manual"
    assert c["agent_gateway.compaction.pre_tokens"] == meta["pre_tokens"]
    if "post_tokens" in meta:
        assert c["agent_gateway.compaction.post_tokens"] == meta["post_tokens"]
    assert c["agent_gateway.compaction.result"] == "success"
    assert "agent_gateway.compaction.archive_error" not in c
    archive_id = c["agent_gateway.compaction.archive_id"]
    assert archive_id
    # the archive it names exists in the local store under AGENT_GATEWAY_HOME
    stored = [p for p in sandbox.gateway_home.rglob("*") if archive_id in str(p)]
    assert stored, sorted(str(p) for p in sandbox.gateway_home.rglob("*"))
    # the compaction request itself was answered as scripted, and is the compaction's chat:
    # its tokens and cost, though Claude Code streams nothing of it
    assert [r.kind for r in server.requests] == ["prompt", "compaction"]
    (chat,) = children(trace, comp)
    summary = server.requests[1]
    assert chat["name"] == "chat claude-opus-5-5" and chat["kind"] == "SPAN_KIND_CLIENT"
    assert chat["attributes"]["gen_ai.usage.output_tokens"] == scripted_response(
        server, summary).usage.output_tokens
    assert chat["attributes"]["gen_ai.usage.cost"] == pytest.approx(
        c["agent_gateway.compaction.cost_usd"])


def test_subagent_chat_and_tools_nest_under_the_task_span(
    sandbox: Sandbox, scripted: Scripted, receiver: OtlpReceiver
) -> None:
    task = {
        "description": "look around",
        "prompt": "Write a marker file.",
        "subagent_type": "general-purpose",
    }
    server = scripted(
        {
            "responses": [
                tool("Task", task, "prompt", usage(1811, 81, 181, 18)),
                bash("echo from-sub > sub.txt", "subagent", usage(1911, 91, 191, 19)),
                {"when": "tool_result", "text": "One done.", "usage": usage(2011, 21, 201, 20)},
                {"when": "tool_result", "text": "Two done.", "usage": usage(2111, 22, 211, 21)},
            ],
            "default": {"text": "All done.", "times": 0, "usage": usage(2211, 23, 221, 22)},
        }
    )
    out, root, trace = traced_run(
        sandbox, receiver, "delegate", "--allowed-tools", "Bash,Task", "--max-turns", "8"
    )

    assert out.returncode == 0, out.stderr[-3000:]
    assert (sandbox.cwd / "sub.txt").read_text() == "from-sub\n"
    (task_use,) = tool_uses(out)
    assert task_use["name"] == "Task"
    sub_requests = [r for r in server.requests if r.is_subagent]
    assert sub_requests, [r.kind for r in server.requests]
    assert_tree(trace, root)
    assert_chats_match_server(trace, server)

    (task_span,) = [
        t for t in by_name(trace, "execute_tool") if t["attributes"][TOOL_USE_ID] == task_use["id"]
    ]
    assert task_span["name"] == "execute_tool Agent"  # as hooks and policies name it
    (subagent,) = [s for s in trace if s["parent_span_id"] == task_span["span_id"]]
    assert subagent["name"] == "invoke_agent general-purpose"
    assert subagent["attributes"]["gen_ai.agent.id"]
    ids = {s["span_id"]: s for s in trace}

    def ancestors(span: Span) -> list[Span]:
        chain = []
        while span["parent_span_id"] in ids:
            span = ids[span["parent_span_id"]]
            chain.append(span)
        return chain

    sub_ids = {r.message_id for r in sub_requests}
    sub_chats = [c for c in by_name(trace, "chat") if c["attributes"][RESPONSE_ID] in sub_ids]
    assert len(sub_chats) == len(sub_requests)
    for chat in sub_chats:
        assert task_span in ancestors(chat), chat["attributes"][RESPONSE_ID]
        assert chat["attributes"]["agent_gateway.parent_tool_use_id"] == task_use["id"]
    (sub_bash_use,) = tool_uses(out, task_use["id"])
    (sub_bash,) = [
        t
        for t in by_name(trace, "execute_tool")
        if t["attributes"][TOOL_USE_ID] == sub_bash_use["id"]
    ]
    assert task_span in ancestors(sub_bash)
    # the main agent's chats do not sit under the Task span
    main_chats = [c for c in by_name(trace, "chat") if c["attributes"][RESPONSE_ID] not in sub_ids]
    assert main_chats and all(task_span not in ancestors(c) for c in main_chats)
    # per-model usage on the root includes the subagent; the stream's usage does not
    a = root["attributes"]
    model = "agent_gateway.result.model_usage.claude-opus-5-5"
    scripted_usage = [scripted_response(server, r).usage for r in server.requests]
    assert a[f"{model}.input_tokens"] == sum(u.input_tokens for u in scripted_usage)
    assert a[f"{model}.output_tokens"] == sum(u.output_tokens for u in scripted_usage)
    # The subagent's chats carry the scripted output tokens and stop reasons (from its
    # transcript: the stream had output_tokens 1 and no stop reason for them).
    for chat in sub_chats:
        (request,) = [r for r in sub_requests if r.message_id == chat["attributes"][RESPONSE_ID]]
        scripted = scripted_response(server, request)
        assert chat["attributes"]["gen_ai.usage.output_tokens"] == scripted.usage.output_tokens
        assert chat["attributes"]["gen_ai.usage.output_tokens"] > 1
        assert chat["attributes"]["gen_ai.response.finish_reasons"] == [
            scripted.effective_stop_reason
        ]
    assert sorted(c["attributes"]["gen_ai.response.finish_reasons"][0] for c in sub_chats) == [
        "end_turn",
        "tool_use",
    ]
    # Cost: every chat is priced, the subagent's at list price for its scripted usage, and
    # the chat costs add up to total_cost_usd.
    prices = load_price_table()
    for chat in sub_chats:
        (request,) = [r for r in sub_requests if r.message_id == chat["attributes"][RESPONSE_ID]]
        u = scripted_response(server, request).usage
        cost = prices.cost(
            server.scenario.model,
            PriceUsage(
                input_tokens=u.input_tokens,
                output_tokens=u.output_tokens,
                cache_read_input_tokens=u.cache_read_input_tokens,
                cache_creation_input_tokens=u.cache_creation_input_tokens,
            ),
        )
        assert chat["attributes"]["gen_ai.usage.cost"] == pytest.approx(cost, abs=1e-12)
    assert_cost_adds_up(trace, root, out)


def test_caller_traceparent_makes_the_root_its_child(
    sandbox: Sandbox, scripted: Scripted, receiver: OtlpReceiver
) -> None:
    scripted({"responses": [{"text": "hi", "usage": usage(1111, 11, 111, 1)}]})
    trace_id, parent_id = "4bf92f3577b34da6a3ce929d0e0e4736", "00f067aa0ba902b7"
    env = otlp_env(
        sandbox,
        receiver.endpoint,
        TRACEPARENT=f"00-{trace_id}-{parent_id}-01",
        TRACESTATE="vendor=abc",
    )
    out, root, trace = traced_run(sandbox, receiver, "hi", env=env)

    assert out.returncode == 0, out.stderr
    assert root["trace_id"] == trace_id
    assert root["parent_span_id"] == parent_id
    assert {s["trace_id"] for s in trace} == {trace_id}
    assert len(trace) == 3  # root, turn, chat
    assert_tree(trace, root)


def free_closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
    return port  # closed again: connections are refused


def test_collector_down_never_fails_or_stalls_the_run(
    sandbox: Sandbox, scripted: Scripted, receiver: OtlpReceiver
) -> None:
    scenario = {
        "responses": [
            bash("echo 1", "prompt", usage(1211, 12, 121, 2)),
            {**bash("echo 2", "tool_result", usage(1212, 13, 122, 3)), "times": 2},
        ],
        "default": {"text": "done", "times": 0, "usage": usage(1213, 14, 123, 4)},
    }
    scripted(scenario)
    started = time.monotonic()
    up, _root, trace = traced_run(sandbox, receiver, "go", "--allowed-tools", "Bash")
    up_s = time.monotonic() - started
    assert up.returncode == 0, up.stderr
    assert len(by_name(trace, "chat")) == 4

    down_env = otlp_env(sandbox, f"http://127.0.0.1:{free_closed_port()}")
    started = time.monotonic()
    down = gateway_run(sandbox, "go", "--allowed-tools", "Bash", env=down_env)
    down_s = time.monotonic() - started
    assert down.returncode == 0, down.stderr
    assert down.result["subtype"] == "success"
    assert down.result["num_turns"] == up.result["num_turns"]
    assert "Traceback" not in down.stderr
    assert down_s <= 2 * up_s + 2, (up_s, down_s)
    # the spans that could not be delivered are counted and reported once, not per span or
    # per retry (no OTLP exporter retry chatter: the refused connection is seen up front)
    assert down.stderr.count("span(s) dropped") == 1, down.stderr[-2000:]
    assert "Transient error" not in down.stderr and "retrying" not in down.stderr


NATIVE_SCOPE = "com.anthropic.claude_code.tracing"


def test_claude_code_native_spans_join_the_gateway_trace_with_equal_tokens(
    sandbox: Sandbox, scripted: Scripted, receiver: OtlpReceiver
) -> None:
    server = scripted(
        {
            "responses": [
                bash("echo a", "prompt", usage(1234, 57, 300, 50)),
                bash("echo b", "tool_result", usage(2345, 68, 400, 60)),
                {"when": "tool_result", "text": "ok", "usage": usage(3456, 79, 500, 70)},
            ]
        }
    )
    env = otlp_env(
        sandbox,
        receiver.endpoint,
        CLAUDE_CODE_ENABLE_TELEMETRY="1",
        CLAUDE_CODE_ENHANCED_TELEMETRY_BETA="1",
    )
    out, root, _ = traced_run(sandbox, receiver, "go", "--allowed-tools", "Bash", env=env)
    assert out.returncode == 0, out.stderr

    def native_llm(spans: Spans) -> list[Span]:
        return [s for s in spans if s["name"] == "claude_code.llm_request"]

    spans = receiver.wait_for(lambda got: len(native_llm(got)) >= 3, timeout=15)
    trace = [s for s in spans if s["trace_id"] == root["trace_id"]]
    native = [s for s in spans if s["scope"] == NATIVE_SCOPE]
    ours = [s for s in trace if s["scope"] != NATIVE_SCOPE]
    assert native and all(s["trace_id"] == root["trace_id"] for s in native)  # via TRACEPARENT
    assert_tree(ours, root)
    # Claude Code's interaction span is a child of the gateway's root
    (interaction,) = [s for s in native if s["name"] == "claude_code.interaction"]
    assert interaction["parent_span_id"] == root["span_id"]
    assert interaction["attributes"]["gen_ai.conversation.id"] == out.session_id
    native_ids = {s["span_id"] for s in native}
    assert all(s["parent_span_id"] in native_ids for s in native if s is not interaction)

    # response by response (in request order), Claude Code's tokens equal the gateway's
    chats = sorted(assert_chats_match_server(ours, server), key=lambda s: s["start_ns"])
    llm = sorted(native_llm(native), key=lambda s: s["start_ns"])
    assert len(llm) == len(chats) == len(server.requests) == 3
    for chat, request in zip(chats, server.requests, strict=True):
        assert chat["attributes"][RESPONSE_ID] == request.message_id
    for theirs, mine in zip(llm, chats, strict=True):
        t, m = theirs["attributes"], mine["attributes"]
        for key in (
            "gen_ai.usage.input_tokens",
            "gen_ai.usage.output_tokens",
            "gen_ai.usage.cache_read.input_tokens",
            "gen_ai.response.finish_reasons",
            "gen_ai.request.model",
        ):
            assert t[key] == m[key], key
        # Claude Code names cache creation `cache_write` (the conventions say cache_creation)
        assert (
            t["gen_ai.usage.cache_write.input_tokens"]
            == m["gen_ai.usage.cache_creation.input_tokens"]
        )
        assert "gen_ai.usage.cost" not in t  # only the gateway prices requests
    # tool spans: the same call ids on both sides
    native_tools = [s for s in native if s["name"] == "claude_code.tool"]
    assert sorted(s["attributes"]["gen_ai.tool.call.id"] for s in native_tools) == sorted(
        s["attributes"][TOOL_USE_ID] for s in by_name(ours, "execute_tool")
    )
    # what only the gateway has: result subtype, terminal reason, turns and cost on the root
    assert root["attributes"]["agent_gateway.result.terminal_reason"] == "completed"
    assert not any("terminal_reason" in k or "cost" in k for s in native for k in s["attributes"])
