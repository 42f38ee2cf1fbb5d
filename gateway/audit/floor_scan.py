"""Claude Code's own refusals, read from a transcript.

A call Claude Code's permission rules refuse before any hook runs (a file tool on a path its
deny rules name) leaves no hook request, only a tool result in the transcript carrying one of
Claude Code's fixed refusal texts. Behind `serve` and command hooks that is the only trace of
it, so the end of each turn (Stop) reads the turn's results back and the gateway records each
refusal (handlers/turn_end.py). Pure: bytes in, refusals out.

Only a result whose whole text is one of Claude Code's templates counts: a command's failure
starts with `Exit code N`, so output an agent prints cannot pose as a refusal.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

_REFUSAL = re.compile(
    r"(?:<tool_use_error>)?(?:"
    r"Permission to use \S.* denied\b.*"
    r"|File is in a directory that is denied by your permission settings\."
    r"|Claude requested permissions to use \S+, but you haven't granted it yet\."
    r")(?:</tool_use_error>)?",
    re.DOTALL,
)
"""Claude Code 2.1's refusal texts (its permission rules, its don't-ask mode, an unanswered
permission request): `Permission to use Bash with command rm -rf x has been denied.`"""


@dataclass(frozen=True, slots=True)
class FloorRefusal:
    tool_use_id: str
    tool_name: str
    tool_input: Mapping[str, Any]
    told: str
    """What Claude Code told the model."""


def is_refusal_text(text: str) -> bool:
    return _REFUSAL.fullmatch(text.strip()) is not None


def refusals_in(lines: Iterable[bytes], prompt_id: str = "") -> list[FloorRefusal]:
    """Each refused call in a transcript's lines, in order; with `prompt_id`, only those of
    that prompt's turn (a record without a prompt id is kept: it cannot be placed)."""
    calls: dict[str, tuple[str, Mapping[str, Any]]] = {}
    refused: dict[str, str] = {}
    for line in lines:
        if b'"tool_use"' in line:
            for block in _blocks(line, "assistant"):
                if block.get("type") == "tool_use" and isinstance(block.get("id"), str):
                    tool_input = block.get("input")
                    calls[block["id"]] = (str(block.get("name") or ""),
                                          tool_input if isinstance(tool_input, dict) else {})
        if b'"is_error"' in line and (b"denied" in line or b"granted" in line):
            for block in _blocks(line, "user", prompt_id):
                told = _result_text(block)
                if told is not None and is_refusal_text(told):
                    refused[str(block.get("tool_use_id") or "")] = told.strip()
    return [FloorRefusal(tool_use_id, *calls[tool_use_id], told)
            for tool_use_id, told in refused.items() if tool_use_id in calls]


def _blocks(line: bytes, role: str, prompt_id: str = "") -> list[dict[str, Any]]:
    try:
        record = json.loads(line)
    except ValueError:
        return []  # a torn last line: the next turn's read sees it whole
    if not isinstance(record, dict) or record.get("type") != role:
        return []
    if prompt_id and record.get("promptId") not in (None, prompt_id):
        return []
    message = record.get("message")
    content = message.get("content") if isinstance(message, dict) else None
    return [b for b in content if isinstance(b, dict)] if isinstance(content, list) else []


def _result_text(block: Mapping[str, Any]) -> str | None:
    if block.get("type") != "tool_result" or block.get("is_error") is not True:
        return None
    content = block.get("content")
    if isinstance(content, list):
        content = "".join(str(c.get("text", "")) for c in content if isinstance(c, dict))
    return content if isinstance(content, str) else None
