"""The trace of a session wired with local command hooks, built at each turn's end.

At Stop, StopFailure and SessionEnd the hook takes what is new since the last build: the
journal's events (handlers/trace_journal.py) and the responses the session's transcripts
recorded (there is no proxy: telemetry/transcript_responses.py), in time order, and hands them
to the fact layer `serve` uses (server/tracing.py, inline: each event at its own time), which
exports the spans that are complete. The facts kept between builds live beside the journal,
one file per session, updated under a lock. SessionEnd closes the root and removes both.

A response starts when the event before it happened (the transcript records when it ended).
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import logging
import os
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gateway.handlers.trace_journal import journal_dir, journal_path, session_key
from gateway.telemetry.fact_state import decision_from
from gateway.telemetry.transcript_responses import TranscriptResponse, responses_in

log = logging.getLogger("gateway.telemetry")

MAX_TRANSCRIPT_BYTES = 256 * 1024 * 1024
STALE_S = 24 * 3600
"""A journal untouched this long (a session killed before its SessionEnd) is removed by the
next build of any session."""


@dataclass
class _Kept:
    """What a build leaves for the next: the facts, how far the journal was read, and which
    responses were handed on."""

    fields: dict[str, str]
    offset: int
    responses: list[str]
    last_ns: int

    @classmethod
    def load(cls, path: Path) -> _Kept:
        try:
            raw = json.loads(path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            return cls({}, 0, [], 0)
        except ValueError:
            log.error("%s is not readable: the trace starts again from the journal", path)
            return cls({}, 0, [], 0)
        return cls(dict(raw.get("fields") or {}), int(raw.get("offset") or 0),
                   list(raw.get("responses") or []), int(raw.get("last_ns") or 0))

    def save(self, path: Path) -> None:
        temp = path.with_suffix(".tmp")
        temp.write_text(json.dumps(self.__dict__), encoding="utf-8")
        os.replace(temp, path)


def build(home: Path, body: Mapping[str, Any], *, projects_root: Path | None = None) -> int:
    """Export the spans the session's new events complete; how many events were handled.
    Raises OSError when the journal cannot be read (tracing fails, the turn does not)."""
    session = body.get("session_id")
    if not isinstance(session, str) or not journal_path(home, session).exists():
        return 0
    final = body.get("hook_event_name") == "SessionEnd"
    key = session_key(session)
    with _locked(journal_dir(home) / f"{key}.lock"):
        kept_path = journal_dir(home) / f"{key}.state.json"
        kept = _Kept.load(kept_path)
        events, offset = _journal_from(journal_path(home, session), kept.offset)
        seen = set(kept.responses)
        responses = [r for r in _responses(body, session, projects_root)
                     if r.message_id not in seen]
        handled = _replay(session, kept, events, responses)
        kept.offset = offset
        kept.responses = [*kept.responses, *(r.message_id for r in responses)]
        if final:
            for path in (journal_path(home, session), kept_path):
                path.unlink(missing_ok=True)
        else:
            kept.save(kept_path)
    _remove_stale(home)
    return handled


def _replay(session: str, kept: _Kept, events: list[dict[str, Any]],
            responses: list[TranscriptResponse]) -> int:
    from gateway.server.proxy import ProxiedExchange
    from gateway.server.tracing import ServerTracer
    from gateway.telemetry import ContentPolicy
    from gateway.telemetry.export import span_sink_from_env
    from gateway.telemetry.fact_state import MemoryTraceState
    from gateway.telemetry.pricing import load_price_table

    items: list[tuple[int, int, Any]] = [(int(e.get("at") or 0), 0, e) for e in events]
    items += [(r.at_ns, 1, r) for r in responses]
    items.sort(key=lambda item: (item[0], item[1]))
    if not items:
        return 0
    sink = span_sink_from_env()
    state = MemoryTraceState()
    state.restore(session, kept.fields)
    now = [kept.last_ns]
    tracer = ServerTracer(
        sink, load_price_table(),
        content=ContentPolicy(capture=bool(sink.settings and sink.settings.capture_content)),
        clock=lambda: now[0], state=state, inline=True)
    try:
        for at, _, item in items:
            before, now[0] = now[0], at
            if isinstance(item, TranscriptResponse):
                message = item.message
                tracer.on_exchange(ProxiedExchange(
                    session_id=session, agent_id=item.agent_id, path="/v1/messages",
                    request_model=str(message.get("model") or ""), status=200, retry_count=0,
                    started_ns=min(before or at, at), ended_ns=at, body_json=message))
            else:
                _handle(tracer, item)
        kept.fields = state.session_fields(session)
        kept.last_ns = now[0]
    finally:
        sink.shutdown()
    return len(items)


def _handle(tracer: Any, entry: Mapping[str, Any]) -> None:
    event, body = str(entry.get("event") or ""), entry.get("body") or {}
    if event == "PreToolUse":
        decision = decision_from(entry.get("decision"))
        if decision is not None:
            tracer.on_pre_tool_use(body, decision)
    elif event in ("PostToolUse", "PostToolUseFailure"):
        tracer.on_tool_end(body, None, event == "PostToolUseFailure")
    elif event == "PreCompact":
        tracer.on_compaction(body, int(entry.get("at") or 0), str(entry.get("archive_id") or ""),
                             str(entry.get("error") or ""))
    else:
        tracer.on_hook(event, body)


def _journal_from(path: Path, offset: int) -> tuple[list[dict[str, Any]], int]:
    """The whole lines after `offset` (a line being written is left for the next build)."""
    with path.open("rb") as f:
        f.seek(offset)
        data = f.read()
    end = data.rfind(b"\n") + 1
    events = []
    for line in data[:end].splitlines():
        try:
            entry = json.loads(line)
        except ValueError:
            log.error("a line of %s is not JSON: left out of the trace", path)
            continue
        if isinstance(entry, dict):
            events.append(entry)
    return events, offset + end


def _responses(body: Mapping[str, Any], session: str, projects_root: Path | None
               ) -> list[TranscriptResponse]:
    """The responses in the session's transcript and its subagents', read confined to the
    Claude projects root as the archive reads them."""
    from gateway.archive.capture import session_transcripts
    from gateway.env import claude_projects_root
    from gateway.errors import GatewayError

    transcript = body.get("transcript_path")
    if not isinstance(transcript, str) or not transcript:
        return []
    root = projects_root if projects_root is not None else claude_projects_root()
    found: list[TranscriptResponse] = []
    try:
        for handle in session_transcripts(Path(transcript), root, session, MAX_TRANSCRIPT_BYTES):
            found.extend(responses_in(handle))
    except (GatewayError, OSError) as exc:
        log.error("the transcript of session %s is not read for its trace: %s", session, exc)
    return found


@contextlib.contextmanager
def _locked(path: Path) -> Iterator[None]:
    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)


def _remove_stale(home: Path) -> None:
    import time

    cutoff = time.time() - STALE_S
    for path in journal_dir(home).glob("*"):
        try:
            if path.stat().st_mtime < cutoff:
                path.unlink()
        except OSError:
            continue
