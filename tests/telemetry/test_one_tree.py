"""One trace-tree builder: run's stream reader (telemetry/spans.py) and serve's hook and proxy
handler (server/tracing.py) only gather facts; every span is made by telemetry/tree.py, and
every turn, tool and subagent span from the one fact layer both feed (telemetry/facts.py)."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

GATEWAY = Path(__file__).resolve().parents[2] / "gateway"
VANTAGE_POINTS = ("telemetry/spans.py", "server/tracing.py")
SPAN_MAKERS = {
    "SpanSpec", "chat_span", "chat_span_from_sse", "tool_attributes", "tool_events",
    "tool_status", "compaction_attributes", "compaction_spec",
}


def _calls(source: str) -> set[str]:
    names = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Call):
            func = node.func
            names.add(func.id if isinstance(func, ast.Name) else getattr(func, "attr", ""))
    return names


FACT_SPANS = {"turn", "tool", "agent"}
"""The Tree's spans only the fact layer asks for."""


@pytest.mark.parametrize("module", VANTAGE_POINTS)
def test_a_vantage_point_makes_no_span_of_its_own(module: str) -> None:
    calls = _calls((GATEWAY / module).read_text())
    assert not calls & SPAN_MAKERS, f"{module} builds spans itself: {calls & SPAN_MAKERS}"
    assert "Tree" in calls, f"{module} does not hand its facts to the tree"
    assert "TraceFacts" in calls, f"{module} does not feed the fact layer"
    assert not calls & FACT_SPANS, f"{module} makes fact-layer spans: {calls & FACT_SPANS}"


def test_the_fact_layer_makes_the_turns_tools_and_subagents() -> None:
    assert _calls((GATEWAY / "telemetry/facts.py").read_text()) >= FACT_SPANS


def test_the_tree_makes_every_kind_of_span() -> None:
    from gateway.telemetry.tree import Tree

    made = {"chat", "tool", "agent", "turn", "compaction", "compaction_chat", "root"}
    assert made <= set(vars(Tree))
