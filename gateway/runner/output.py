"""What `agent-gateway run` prints, built from the raw message stream."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import TextIO

from gateway.hookio.messages import ResultMessage, StreamMessage, as_result

# Control-protocol frames (claude-agent-sdk's business): never part of the conversation.
_CONTROL_TYPES = frozenset(
    {"control_request", "control_response", "control_cancel_request", "keep_alive"}
)


def is_conversation_message(message: StreamMessage) -> bool:
    """True for what `claude -p --output-format stream-json --verbose` would print."""
    return message.get("type") not in _CONTROL_TYPES and message.get("sdk_host_only") is not True


def visible_to_caller(message: StreamMessage, include_partial: bool) -> bool:
    """Whether `claude -p --output-format stream-json --verbose` would have printed this.

    The gateway always asks for the partial stream; without the caller's flag Claude Code
    prints neither stream_event lines nor the `requesting` status that comes with them.
    """
    if include_partial:
        return True
    if message.get("type") == "stream_event":
        return False
    return not (
        message.get("type") == "system"
        and message.get("subtype") == "status"
        and message.get("status") == "requesting"
    )


@dataclass
class StreamJsonPrinter:
    """Prints each message as one JSON line, as it arrives."""

    out: TextIO
    include_partial: bool = False

    def __call__(self, message: StreamMessage) -> None:
        if visible_to_caller(message, self.include_partial):
            self.out.write(json.dumps(message, ensure_ascii=False) + "\n")
            self.out.flush()


@dataclass
class ResultTracker:
    """Remembers the last result: a stream can carry several (background subagents)."""

    results: list[ResultMessage] = field(default_factory=list)

    def __call__(self, message: StreamMessage) -> None:
        result = as_result(message)
        if result is not None:
            self.results.append(result)

    @property
    def last(self) -> ResultMessage | None:
        return self.results[-1] if self.results else None


def result_failure(result: ResultMessage) -> str | None:
    """One line describing why a result is a failure, or None for a success."""
    subtype = str(result.get("subtype", ""))
    if subtype == "success" and not result.get("is_error"):
        return None
    errors = [str(e) for e in (result.get("errors") or [])]
    if not errors and result.get("api_error_status"):
        errors.append(f"API error status {result['api_error_status']}")
    if not errors and result.get("result"):
        errors.append(str(result["result"]))
    detail = "; ".join(" ".join(e.split()) for e in errors)
    # Claude Code reports a failed API call as subtype success with is_error set.
    label = subtype if subtype != "success" else str(result.get("terminal_reason") or "api_error")
    return f"{label}{': ' + detail if detail else ''}"
