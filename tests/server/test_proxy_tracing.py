"""The proxy streams through to a scripted upstream; spans from two app instances join up."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from gateway.server.tracing import root_ref
from gateway.telemetry import attributes as A
from gateway.testing import ScriptedServer
from tests.server.conftest import AppFactory

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
    (span,) = sink.spans
    attrs = span.attributes
    assert attrs[A.GEN_AI_USAGE_INPUT_TOKENS] == 1200
    assert attrs[A.GEN_AI_USAGE_OUTPUT_TOKENS] == 42
    assert attrs[A.CHAT_RETRY_COUNT] == 2
    assert attrs[A.HTTP_RESPONSE_STATUS_CODE] == 200
    assert attrs[A.GEN_AI_RESPONSE_FINISH_REASONS] == ("end_turn",)
    assert attrs[A.GEN_AI_REQUEST_MODEL] == REQUEST["model"]
    assert A.CHAT_TTFT_MS in attrs
    root = root_ref("sess-1")
    assert (span.trace_id, span.parent_span_id) == (root.trace_id, root.span_id)


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
    assert all(s.parent_span_id == root.span_id for s in spans if s is not root)
    tool = next(s for s in spans if s.name == "execute_tool Bash")
    assert tool.end_ns - tool.start_ns == 12_000_000
    # a decided the call; b, which emits the span, did not see it and says so rather than
    # deciding again (the decision is in a's audit record, which names this span)
    assert tool.attributes[A.POLICY_DECISION] == "unknown"
