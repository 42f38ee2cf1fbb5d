"""docs/tracing.md's attribute table lists every name of attributes.py, and only those."""

from __future__ import annotations

import re
from pathlib import Path

from gateway.telemetry import attributes as A

DOC = Path(__file__).resolve().parents[2] / "docs" / "tracing.md"
VALUES = {
    "invoke_agent",
    "chat",
    "execute_tool",
    "anthropic",
    "AGENT",
    "LLM",
    "TOOL",
    "CHAIN",
    A.SEMCONV_VERSION,
}


def test_every_attribute_is_documented_once() -> None:
    names = {
        v for k, v in vars(A).items() if k.isupper() and isinstance(v, str) and v not in VALUES
    }
    table = DOC.read_text().split("### Span attributes", 1)[1].split("\n### ", 1)[0]
    rows = re.findall(r"^\| `([^`]+)` \|", table, flags=re.M)
    assert len(rows) == len(set(rows))
    assert set(rows) == names
