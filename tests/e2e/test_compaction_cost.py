"""On the real Claude Code: a compaction's cost is on its span and its chat, and the root's
difference is zero."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest

from gateway.scripted import ScriptedServer
from gateway.telemetry import attributes as A
from tests.e2e.harness import Sandbox, gateway_run

pytestmark = pytest.mark.e2e
Scripted = Callable[[dict[str, Any]], ScriptedServer]


def spans_of(sandbox: Sandbox, session: str) -> list[dict[str, Any]]:
    lines = (sandbox.gateway_home / "spans" / "spans.jsonl").read_text().splitlines()
    spans = [json.loads(line) for line in lines]
    return [s for s in spans if s["attributes"].get(A.GEN_AI_CONVERSATION_ID) == session]


def test_a_compaction_only_run_has_no_cost_difference(
    sandbox: Sandbox, scripted: Scripted
) -> None:
    server = scripted({"responses": [
        {"when": "prompt", "text": "Hello.", "times": 0},
        {"when": "compaction", "text": "<summary>Said hello.</summary>", "times": 0,
         "usage": {"input_tokens": 3000, "output_tokens": 100}},
    ]})
    env = sandbox.env()
    env.pop("OTEL_TRACES_EXPORTER")  # the local span file
    first = gateway_run(sandbox, "hi", env=env)
    assert first.returncode == 0, first.stderr
    compacted = gateway_run(sandbox, "/compact", "--resume", first.session_id, env=env)
    assert compacted.returncode == 0, compacted.stderr
    summaries = [r for r in server.requests if r.kind == "compaction"]
    assert summaries  # the summary requests reached the model, unseen in the stream

    spans = spans_of(sandbox, first.session_id)
    root = [s for s in spans if s["name"] == "invoke_agent claude-code"][-1]["attributes"]
    (compaction,) = [s for s in spans if s["name"] == "compaction"]
    expected = len(summaries) * (3000 * 4 + 100 * 20) / 1e6  # claude-opus-5-5's prices
    assert compaction["attributes"][A.COMPACTION_COST_USD] == pytest.approx(expected)
    # the summary request is the compaction's chat, so the chats add up to what was spent
    (chat,) = [s for s in spans if s["parent_span_id"] == compaction["span_id"]]
    assert chat["attributes"][A.GEN_AI_USAGE_COST] == pytest.approx(expected)
    assert root[A.COST_CHAT_SUM_USD] == pytest.approx(expected)
    assert root[A.COST_RUN_USD] == pytest.approx(expected)
    assert root[A.COST_DIFFERENCE_USD] == 0
    # total_cost_usd counts the whole session, the first process's chat included
    assert root[A.RESULT_TOTAL_COST_USD] == pytest.approx(expected + first.result["total_cost_usd"])
