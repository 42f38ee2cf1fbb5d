"""ATTRIBUTES.md lists every attribute name of attributes.py, and only those."""

from __future__ import annotations

import re
from pathlib import Path

from gateway.telemetry import attributes as A

DOC = Path(A.__file__).with_name("ATTRIBUTES.md")
VALUES = {"invoke_agent", "chat", "execute_tool", "anthropic"}


def test_every_attribute_is_documented_once() -> None:
    names = {
        v for k, v in vars(A).items() if k.isupper() and isinstance(v, str) and v not in VALUES
    }
    rows = re.findall(r"^\| `([^`]+)` \|", DOC.read_text(), flags=re.M)
    assert len(rows) == len(set(rows))
    assert set(rows) == names
