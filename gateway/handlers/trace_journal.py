"""The journal of a session wired with local command hooks: its hook events, one JSON line each.

No process outlives a command hook, so each hook notes its event here and the trace is built
from the journal at each turn's end (handlers/local_trace.py). A session's journal is started
by its SessionStart or UserPromptSubmit hook: a hook of a session without one notes nothing,
so a hand-wired PreToolUse hook alone leaves no file growing that nothing reads.

Standard library only: the PreToolUse hook notes its decision on every call. The content of
an event (tool inputs and results, prompts, answers) is noted only when content capture is on
(OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT), the only time a span shows it.
"""

from __future__ import annotations

import hashlib
import json
import os
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

JOURNAL_DIR = "trace-journal"
STARTS_JOURNAL = ("SessionStart", "UserPromptSubmit")
MAX_ENTRY_BYTES = 256 * 1024
"""An event larger than this is noted without its tool_response (the trace reads only the
subagent's id and whether it runs in the background from it, unless content is captured)."""
KEPT_OF_LARGE_RESPONSE = ("agentId", "isAsync")


CONTENT = ("tool_input", "prompt", "last_assistant_message")
"""What only content capture puts in spans; not kept otherwise (tool inputs hold secrets)."""


def content_captured() -> bool:
    from gateway.telemetry.content import capture_enabled

    return capture_enabled(os.environ.get("OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT"))


def _without_content(body: Mapping[str, Any]) -> dict[str, Any]:
    kept = {k: v for k, v in body.items() if k not in CONTENT}
    response = body.get("tool_response")
    if response is not None:
        kept["tool_response"] = ({k: response[k] for k in KEPT_OF_LARGE_RESPONSE if k in response}
                                 if isinstance(response, Mapping) else None)
    return kept


def session_key(session_id: str) -> str:
    """A file name for a session: its id is the agent's input, so it is hashed."""
    return hashlib.sha256(session_id.encode("utf-8", "surrogatepass")).hexdigest()[:32]


def journal_dir(home: Path) -> Path:
    return home / JOURNAL_DIR


def journal_path(home: Path, session_id: str) -> Path:
    return journal_dir(home) / f"{session_key(session_id)}.jsonl"


def note(
    home: Path, event: str, body: Mapping[str, Any], *, extra: Mapping[str, Any] | None = None,
    at_ns: int | None = None,
) -> bool:
    """Append `event` to its session's journal; False when the session keeps none. Raises
    OSError when the journal cannot be written."""
    session = body.get("session_id")
    if not isinstance(session, str) or not session:
        return False
    path = journal_path(home, session)
    flags = os.O_WRONLY | os.O_APPEND | os.O_NOFOLLOW | os.O_CLOEXEC
    if event in STARTS_JOURNAL:
        path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        flags |= os.O_CREAT
    try:  # opened first: a session that keeps no journal costs one failed open
        fd = os.open(path, flags, 0o600)
    except FileNotFoundError:
        return False
    try:
        line = _line(event, body, extra, at_ns)
        # One write of the whole line, appended: lines of concurrent hooks do not interleave.
        os.write(fd, line.encode("ascii"))
    finally:
        os.close(fd)
    return True


def _line(event: str, body: Mapping[str, Any], extra: Mapping[str, Any] | None,
          at_ns: int | None) -> str:
    entry: dict[str, Any] = {"at": at_ns or time.time_ns(), "event": event,
                             "body": dict(body) if content_captured() else _without_content(body)}
    if extra:
        entry.update(extra)
    line = json.dumps(entry, default=str) + "\n"
    if len(line) > MAX_ENTRY_BYTES and isinstance(body.get("tool_response"), Mapping):
        response = body["tool_response"]
        entry["body"]["tool_response"] = {
            k: response[k] for k in KEPT_OF_LARGE_RESPONSE if k in response}
        line = json.dumps(entry, default=str) + "\n"
    return line
