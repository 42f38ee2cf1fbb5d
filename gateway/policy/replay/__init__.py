"""`agent-gateway policy replay`: recorded tool calls (Claude Code transcripts, the gateway's
audit log, JSONL of PreToolUse hook inputs) decided under a policy without running them, and
compared with what was decided when they were made."""

from gateway.policy.replay.decide import Duplicate, Outcome, Replayed, changed, jsonl_line, replay
from gateway.policy.replay.items import (
    CLAUDE_CODE_DENIED,
    RAN,
    BadLine,
    Item,
    NotDecidable,
    Recorded,
    Replayable,
)
from gateway.policy.replay.sources import Source, SourceKind, kind_of, source_files
from gateway.policy.replay.summary import Tally

__all__ = [
    "CLAUDE_CODE_DENIED",
    "RAN",
    "BadLine",
    "Duplicate",
    "Item",
    "NotDecidable",
    "Outcome",
    "Recorded",
    "Replayable",
    "Replayed",
    "Source",
    "SourceKind",
    "Tally",
    "changed",
    "jsonl_line",
    "kind_of",
    "replay",
    "source_files",
]
