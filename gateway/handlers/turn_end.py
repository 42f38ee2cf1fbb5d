"""At the end of a turn (Stop), Claude Code's own refusals of that turn go on record.

A call Claude Code's permission floor refuses never reaches a hook (audit/floor_scan.py). Behind
`serve` and with command hooks the Stop hook is the first word the gateway gets after such a
turn: it reads the session's transcript (and its subagents'), confined to the Claude projects
root as the archive reads it, and records each refusal of the turn as a deny by Claude Code. `run`
reads the same refusals from its stream instead (runner/floor_refusals.py).

A Stop hook that blocks the stop makes Claude Code fire Stop again for the same prompt: the
refusals already recorded by this process are remembered (bounded) and not recorded twice.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from gateway.audit.floor_scan import FloorRefusal, refusals_in
from gateway.errors import GatewayError
from gateway.types import FLOOR_RULE, Decision, ToolCall

if TYPE_CHECKING:
    from gateway.audit.record import AuditRecord
    from gateway.policy import Policy


class RefusalRecorder(Protocol):
    """What records a refusal (handlers/engine.Engine)."""

    def record_refusal(self, call: ToolCall, reason: str, tenant: str = "") -> object: ...

log = logging.getLogger("gateway.audit")

TURN_END_EVENTS = ("Stop", "StopFailure")
REMEMBERED = 65536
MAX_TRANSCRIPT_BYTES = 256 * 1024 * 1024
"""A transcript larger than this is not read at each turn's end (the refusals in it are not
recorded, and the log says so)."""


class RecordedRefusals:
    """The refusals this process recorded, oldest forgotten first."""

    def __init__(self, capacity: int = REMEMBERED, path: Path | None = None) -> None:
        """`path`: the ids are also kept in this file, for processes that live one turn (the
        command hook); one session's, so only tool_use ids are written."""
        self._capacity = capacity
        self._seen: dict[tuple[str, str, str], None] = {}
        self._path = path
        self._from_file: set[str] = set()
        if path is not None:
            with contextlib.suppress(FileNotFoundError):
                self._from_file = set(path.read_text(encoding="utf-8").split())

    def first_time(self, tenant: str, session_id: str, tool_use_id: str) -> bool:
        key = (tenant, session_id, tool_use_id)
        if key in self._seen or tool_use_id in self._from_file:
            return False
        self._seen[key] = None
        if len(self._seen) > self._capacity:
            del self._seen[next(iter(self._seen))]
        if self._path is not None and tool_use_id.isprintable() and " " not in tool_use_id:
            self._path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
            with self._path.open("a", encoding="utf-8") as f:
                f.write(tool_use_id + "\n")
        return True


def append_refusal(call: ToolCall, reason: str, policy: Policy | None,
                   audit_log: Path | None = None, tenant: str = "") -> AuditRecord:
    """The audit record of a deny by Claude Code's own permission rules, appended."""
    from gateway.audit.log import append_decision
    from gateway.audit.record import policy_redactor

    decision = Decision("deny", FLOOR_RULE, reason,
                        policy_hash=policy.bundle_hash if policy is not None else "",
                        enforced_by="claude-code",
                        self_protection=policy.self_protection if policy is not None else True)
    return append_decision(
        call, decision, audit_log,
        redactor=policy_redactor(policy.compaction) if policy is not None else None,
        extra={"tenant": tenant} if tenant else None)


def record_turn_refusals(
    engine: RefusalRecorder,
    body: Mapping[str, Any],
    recorded: RecordedRefusals,
    *,
    tenant: str = "",
    projects_root: Path | None = None,
) -> int:
    """Record the turn's refusals by Claude Code; how many were new. Never raises: a
    transcript that cannot be read is logged, and the turn's end is not held up by it."""
    session_id = body.get("session_id")
    transcript = body.get("transcript_path")
    if not isinstance(session_id, str) or not isinstance(transcript, str) or not transcript:
        return 0
    prompt_id = body.get("prompt_id")
    try:
        refusals = _read(Path(transcript), session_id, projects_root,
                         prompt_id if isinstance(prompt_id, str) else "")
    except (GatewayError, OSError) as exc:
        log.error("Claude Code's refusals in session %s not read: %s", session_id, exc)
        return 0
    cwd = body.get("cwd") if isinstance(body.get("cwd"), str) else ""
    new = 0
    for refusal in refusals:
        if not recorded.first_time(tenant, session_id, refusal.tool_use_id):
            continue
        call = ToolCall(refusal.tool_name, refusal.tool_input, tool_use_id=refusal.tool_use_id,
                        session_id=session_id, cwd=str(cwd),
                        prompt_id=prompt_id if isinstance(prompt_id, str) else "")
        try:
            engine.record_refusal(call, f"Claude Code: {refusal.told[:1000]}", tenant)
            new += 1
        except Exception:  # one unrecorded refusal never stops the turn's end
            log.exception("a refusal by Claude Code was not recorded")
    return new


def _read(transcript: Path, session_id: str, projects_root: Path | None,
          prompt_id: str) -> list[FloorRefusal]:
    from gateway.archive.capture import session_transcripts
    from gateway.env import claude_projects_root

    root = projects_root if projects_root is not None else claude_projects_root()
    found: list[FloorRefusal] = []
    for handle in session_transcripts(transcript, root, session_id, MAX_TRANSCRIPT_BYTES):
        found.extend(refusals_in(handle, prompt_id))
    return found
