"""The proxy streams through to a scripted upstream; spans from two app instances join up."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from aiohttp import web
from aiohttp.test_utils import TestClient, TestServer

from gateway.scripted import ScriptedServer
from gateway.server.app import ServeConfig, create_app
from gateway.server.proxy import ProxiedExchange
from gateway.server.service import GatewayService
from gateway.server.tracing import ServerTracer, root_ref
from gateway.telemetry import ContentPolicy, load_price_table
from gateway.telemetry import attributes as A
from gateway.telemetry.fact_state import MemoryTraceState
from gateway.types import Decision
from tests.server.conftest import AppFactory, ListSink

REQUEST = {
    "model": "claude-opus-5-5",
    "max_tokens": 100,
    "stream": True,
    "messages": [{"role": "user", "content": "hi"}],
}


@pytest.fixture
def upstream() -> Iterator[ScriptedServer]:
    server = ScriptedServer(
        {"responses": [{"text": "hello", "usage": {"input_tokens": 1200, "output_tokens": 42}}]}
    ).start()
    yield server
    server.stop()


async def test_stream_passes_through_and_taps_a_chat_span(
    make_client: AppFactory, upstream: ScriptedServer
) -> None:
    client, sink = await make_client(upstream=upstream.url)
    headers = {
        "X-Claude-Code-Session-Id": "sess-1",
        "X-Stainless-Retry-Count": "2",
        "x-api-key": "k",
    }
    resp = await client.post("/v1/messages", json=REQUEST, headers=headers)
    assert resp.status == 200
    assert resp.headers["Content-Type"].startswith("text/event-stream")
    text = await resp.text()
    assert "message_start" in text and "message_stop" in text
    spans = sink.spans
    (span,) = [s for s in spans if s.name.startswith("chat")]
    (turn,) = [s for s in spans if s.name == "turn"]
    attrs = span.attributes
    assert attrs[A.GEN_AI_USAGE_INPUT_TOKENS] == 1200
    assert attrs[A.GEN_AI_USAGE_OUTPUT_TOKENS] == 42
    assert attrs[A.CHAT_RETRY_COUNT] == 2
    assert attrs[A.HTTP_RESPONSE_STATUS_CODE] == 200
    assert attrs[A.GEN_AI_RESPONSE_FINISH_REASONS] == ("end_turn",)
    assert attrs[A.GEN_AI_REQUEST_MODEL] == REQUEST["model"]
    assert A.CHAT_TTFT_MS in attrs
    ttft_s = attrs[A.GEN_AI_RESPONSE_TIME_TO_FIRST_CHUNK]
    assert ttft_s == pytest.approx(attrs[A.CHAT_TTFT_MS] / 1e3)
    # the response is a turn of the session's trace, the chat inside it
    root = root_ref("sess-1")
    assert (span.trace_id, span.parent_span_id) == (root.trace_id, turn.span_id)
    assert (turn.trace_id, turn.parent_span_id) == (root.trace_id, root.span_id)
    assert turn.attributes[A.TURN_INDEX] == 1 and turn.attributes[A.TURN_TOOL_CALLS] == 0


async def test_count_tokens_and_unreachable_upstream(make_client: AppFactory) -> None:
    client, sink = await make_client(upstream="http://127.0.0.1:9")
    resp = await client.post(
        "/v1/messages", json=REQUEST, headers={"X-Claude-Code-Session-Id": "s"}
    )
    assert resp.status == 502
    assert (await resp.json())["type"] == "error"
    (span,) = sink.spans
    assert span.status.code == "error"


async def test_two_instances_build_one_trace(
    make_client: AppFactory, upstream: ScriptedServer
) -> None:
    a, sink_a = await make_client(upstream=upstream.url)
    b, sink_b = await make_client(upstream=upstream.url)
    session = {"X-Claude-Code-Session-Id": "sess-2"}
    await (await a.post("/v1/messages", json=REQUEST, headers=session)).read()
    pre = {
        "hook_event_name": "PreToolUse",
        "session_id": "sess-2",
        "tool_name": "Bash",
        "tool_input": {"command": "echo hi"},
        "tool_use_id": "toolu_1",
    }
    await a.post("/hooks/PreToolUse", json=pre)
    post = {**pre, "hook_event_name": "PostToolUse", "duration_ms": 12}
    await b.post("/hooks/PostToolUse", json=post)
    await a.post("/hooks/SessionEnd", json={"session_id": "sess-2", "reason": "other"})
    spans = sink_a.spans + sink_b.spans
    assert {s.trace_id for s in spans} == {root_ref("sess-2").trace_id}
    root = next(s for s in spans if s.parent_span_id is None)
    assert root.name == "invoke_agent claude-code"
    # one connected tree: the tool's response was never seen (it asked for no tool), so
    # the tool sits under the root
    ids = {s.span_id for s in spans}
    assert all(s.parent_span_id in ids for s in spans if s is not root)
    tool = next(s for s in spans if s.name == "execute_tool Bash")
    assert tool.parent_span_id == root.span_id
    assert tool.end_ns - tool.start_ns == 12_000_000
    # a decided the call; b, which emits the span, shares no trace state with it and says so
    # rather than deciding again (the decision is in a's audit record, which names this span)
    assert tool.attributes[A.POLICY_DECISION] == "unknown"


TOOL_UPSTREAM = {
    "responses": [
        {
            "when": "prompt",
            "text": "running it",
            "tool_use": [{"name": "Bash", "input": {"command": "echo hi"}}],
            "usage": {"input_tokens": 1300, "output_tokens": 43},
        },
        {
            "when": "tool_result",
            "text": "done",
            "usage": {"input_tokens": 1400, "output_tokens": 44},
        },
    ]
}


async def test_instances_sharing_trace_state_nest_the_tool_in_its_turn(
    make_client: AppFactory,
) -> None:
    """The response goes through one instance, the tool's hooks through the other: with a
    shared trace state (Redis in production), the tool span lands in the response's turn."""
    shared = MemoryTraceState()
    with ScriptedServer(TOOL_UPSTREAM) as upstream:
        a, sink_a = await make_client(upstream=upstream.url, trace_state=shared)
        b, sink_b = await make_client(upstream=upstream.url, trace_state=shared)
        session = {"X-Claude-Code-Session-Id": "sess-3"}
        body = await (await a.post("/v1/messages", json=REQUEST, headers=session)).text()
        tool_use_id = "toolu_" + body.split('"id": "toolu_', 1)[1].split('"', 1)[0]
        tool = {"session_id": "sess-3", "tool_name": "Bash", "tool_use_id": tool_use_id,
                "tool_input": {"command": "echo hi"}, "cwd": "/tmp"}
        await b.post("/hooks/PreToolUse", json={**tool, "hook_event_name": "PreToolUse"})
        await b.post("/hooks/PostToolUse", json={**tool, "hook_event_name": "PostToolUse",
                                                  "tool_response": {"stdout": "hi"}})
        result = {"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": tool_use_id, "content": "hi"}]}
        follow_up = {**REQUEST, "messages": [*REQUEST["messages"], result]}
        await (await b.post("/v1/messages", json=follow_up, headers=session)).read()
        await a.post("/hooks/SessionEnd", json={"session_id": "sess-3", "reason": "other"})
        spans = sink_a.spans + sink_b.spans
    by_id = {s.span_id: s for s in spans}
    (root,) = [s for s in spans if s.parent_span_id is None]
    (bash,) = [s for s in spans if s.name == "execute_tool Bash"]
    turns = sorted((s for s in spans if s.name == "turn"), key=lambda s: s.start_ns)
    assert [t.attributes[A.TURN_INDEX] for t in turns] == [1, 2]
    assert all(t.parent_span_id == root.span_id for t in turns)
    assert bash.parent_span_id == turns[0].span_id
    assert turns[0].attributes[A.TURN_TOOL_CALLS] == 1
    assert turns[0].end_ns >= bash.end_ns >= bash.start_ns >= turns[0].start_ns
    chats = [s for s in spans if s.name.startswith("chat")]
    assert sorted(by_id[c.parent_span_id].name for c in chats) == ["turn", "turn"]
    assert bash.attributes[A.TOOL_SPLIT_COST_USD] == pytest.approx(
        next(c for c in chats if c.parent_span_id == turns[0].span_id).attributes[
            A.GEN_AI_USAGE_COST
        ]
    )
    assert root.status.code == "ok"
    assert root.attributes[A.COST_CHAT_SUM_USD] == pytest.approx(
        sum(float(c.attributes[A.GEN_AI_USAGE_COST]) for c in chats)
    )


def test_memory_trace_state_forgets_closed_sessions() -> None:
    now = [0.0]
    state = MemoryTraceState(clock=lambda: now[0])
    state.set("old", {"tool-turn:t": "m"})
    state.forget_activity("old")  # its root closed
    state.set("live", {"tool-turn:u": "n"})
    now[0] = 601.0
    for i in range(1024):
        state.set("live", {f"k{i}": "v"})
    assert state.get("old", "tool-turn:t") is None
    assert state.get("live", "tool-turn:u") == "n"
    assert state.set_new("s", "f", "1") and not state.set_new("s", "f", "2")
    assert state.remove("s", "f") and not state.remove("s", "f")
    assert state.add("s", "n", 2) == 2 and state.add("s", "c", 0.5) == 0.5


def _long_stream(deltas: int, piece: str) -> tuple[web.Application, bytes]:
    """An upstream sending one long text in `deltas` deltas, in 4 KB writes; and its bytes."""
    def sse(event: dict[str, Any]) -> bytes:
        return f"event: {event['type']}\ndata: {json.dumps(event)}\n\n".encode()

    body = sse({"type": "message_start", "message": {
        "id": "msg_long", "type": "message", "role": "assistant", "model": "claude-opus-5-5",
        "content": [], "usage": {"input_tokens": 5, "output_tokens": 1}}})
    body += sse({"type": "content_block_start", "index": 0,
                 "content_block": {"type": "text", "text": ""}})
    body += sse({"type": "content_block_delta", "index": 0,
                 "delta": {"type": "text_delta", "text": piece}}) * deltas
    body += sse({"type": "content_block_stop", "index": 0})
    body += sse({"type": "message_delta", "delta": {"stop_reason": "end_turn"},
                 "usage": {"output_tokens": 777}})
    body += sse({"type": "message_stop"})

    async def messages(request: web.Request) -> web.StreamResponse:
        await request.read()
        response = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
        await response.prepare(request)
        for i in range(0, len(body), 4096):
            await response.write(body[i : i + 4096])
        await response.write_eof()
        return response

    app = web.Application()
    app.router.add_post("/v1/messages", messages)
    return app, body


async def test_a_long_stream_is_folded_as_it_passes_and_keeps_no_events(
    policy_file: Path,
) -> None:
    upstream_app, sent = _long_stream(5000, "0123456789")
    upstream = TestServer(upstream_app)
    await upstream.start_server()
    sink = ListSink()
    tracer = ServerTracer(sink, load_price_table(), content=ContentPolicy(capture=True, limit=40))
    exchanges: list[ProxiedExchange] = []

    def tap(exchange: ProxiedExchange) -> None:
        exchanges.append(exchange)
        tracer.on_exchange(exchange)

    service = GatewayService([str(policy_file)], tracer)
    config = ServeConfig(policy_paths=[str(policy_file)], upstream=str(upstream.make_url("")),
                         content_cap=tracer.content_cap)
    client = TestClient(TestServer(create_app(config, service, tap)))
    await client.start_server()
    try:
        resp = await client.post("/v1/messages", json=REQUEST,
                                 headers={"X-Claude-Code-Session-Id": "sess-long"})
        assert await resp.read() == sent  # every byte, unchanged
    finally:
        await client.close()
        await upstream.close()
    assert tracer.flush()
    (exchange,) = exchanges
    assert not hasattr(exchange, "events")  # the events were folded, none kept
    acc = exchange.response()
    (text,) = acc.text_blocks
    assert (text.kept, text.total) == (40, 50_000)  # the content kept: the capture limit
    (span,) = [s for s in sink.spans if s.name.startswith("chat")]
    assert span.attributes[A.GEN_AI_USAGE_OUTPUT_TOKENS] == 777
    (message,) = json.loads(str(span.attributes[A.GEN_AI_OUTPUT_MESSAGES]))
    assert message["parts"] == [
        {"type": "text", "content": "0123456789" * 4 + "...[truncated 49960 chars]"}
    ]


def test_the_shared_trace_state_keeps_no_command_text_without_content_capture() -> None:
    # Replicas share it (Redis): a decision's `matched` (the command a rule matched) stays out.
    state, sink = MemoryTraceState(), ListSink()
    tracer = ServerTracer(sink, load_price_table(), content=ContentPolicy(), state=state)
    decision = Decision("deny", rule_id="no-rm", reason="no", matched="rm -rf /srv/secret-db")
    body = {"session_id": "sess-9", "tool_use_id": "toolu_9", "tool_name": "Bash",
            "tool_input": {"command": "rm -rf /srv/secret-db"}}
    tracer.on_pre_tool_use(body, decision)
    assert tracer.flush(10)
    tracer.close()
    assert "secret-db" not in json.dumps(state.get_all("sess-9"))
    (tool,) = [s for s in sink.spans if s.name == "execute_tool Bash"]
    assert tool.attributes[A.POLICY_RULE_ID] == "no-rm"
