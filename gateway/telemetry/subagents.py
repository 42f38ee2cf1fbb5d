"""A subagent's transcript -> the final usage of each of its API responses: pure.

Claude Code 2.1.332 never puts a subagent's responses in the partial stream, so the stream's
`assistant` lines carry only message_start's placeholder usage (output_tokens 1, no
stop_reason). The subagent transcript, `<session transcript without .jsonl>/subagents/
agent-<agentId>.jsonl`, records one `assistant` entry per content block, the entries of one
response sharing `message.id`, each with the response's final usage and stop_reason.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import PurePath

from gateway.telemetry.chat import usage_from_api
from gateway.telemetry.pricing import Usage

SUBAGENTS_DIR = "subagents"
TRANSCRIPT_GLOB = "agent-*.jsonl"
TRANSCRIPT_SOURCE = "transcript"
"""The chat span's usage source when its final usage came from a transcript."""


@dataclass(frozen=True, slots=True)
class FinalUsage:
    """One API response's final usage and stop reason, as its transcript recorded them."""

    usage: Usage
    stop_reason: str | None = None
    model: str = ""


def final_usage_by_message_id(lines: Iterable[str | bytes]) -> dict[str, FinalUsage]:
    """Per `message.id`, the last `assistant` entry's usage and stop_reason.

    Lines that are not JSON objects, not `assistant` entries, or lack a message id or a usage
    object are skipped: a transcript may end in a half-written line.
    """
    found: dict[str, FinalUsage] = {}
    for line in lines:
        if not line.strip():
            continue
        try:
            entry = json.loads(line)
        except ValueError:
            continue
        if not isinstance(entry, Mapping) or entry.get("type") != "assistant":
            continue
        message = entry.get("message")
        if not isinstance(message, Mapping):
            continue
        message_id, usage = message.get("id"), message.get("usage")
        if not isinstance(message_id, str) or not message_id or not isinstance(usage, Mapping):
            continue
        stop = message.get("stop_reason")
        found[message_id] = FinalUsage(
            usage=usage_from_api(usage),
            stop_reason=stop if isinstance(stop, str) and stop else None,
            model=str(message.get("model") or ""),
        )
    return found


def subagents_dir(transcript_path: str) -> PurePath:
    """Where a session's subagent transcripts live, from any hook input's transcript_path
    (the session's own transcript, or already a subagent's)."""
    path = PurePath(transcript_path)
    if path.parent.name == SUBAGENTS_DIR:
        return path.parent
    return path.with_suffix("") / SUBAGENTS_DIR
