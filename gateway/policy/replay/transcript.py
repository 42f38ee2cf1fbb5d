"""Claude Code session transcripts (`~/.claude/projects/<project>/<session>.jsonl`, and each
subagent's under `<session>/subagents/`): the tool calls and what became of them.

An `assistant` line's `message.content` holds the `tool_use` blocks (id, name, input); the
line carries the session's `cwd`, `sessionId` and, in a subagent's transcript, `agentId`. The
result comes back in a later `user` line as a `tool_result` block, and that line records who
decided the call (Claude Code 2.1.332):
`permissionDecision: {decision: accept|reject, source: hook|config|..., reasonCode}`; source
`hook` is the PreToolUse hook's allow or deny; a `reasonCode` of `hook:PreToolUse` with
another source is the hook's ask, answered by the user (or refused, without one); anything
else is Claude Code's own permission flow. Claude Code's `--output-format stream-json` lines
have the same shape (the decision under `tool_result_meta`, the cwd on the `init` line).
Without either, the result's text tells a hook's deny and Claude Code's refusals apart.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from typing import cast

from gateway.policy.replay.items import (
    CLAUDE_CODE_DENIED,
    RAN,
    BadLine,
    Item,
    Recorded,
    Replayable,
)
from gateway.types import JSONObject, ToolCall

MAX_PENDING = 10_000
"""Calls held while their results are awaited; beyond it the oldest is decided without one
(a transcript whose results never come should not fill memory)."""
TOOL_ALIASES = {"Task": "Agent"}
"""Names a transcript may record for a tool that Claude Code runs, and hooks see, under its
current name: on 2.1.332 a tool_use named Task runs the Agent tool, and the PreToolUse hook
gets `tool_name: Agent` (tests/fixtures/claude-code-2.1.332/audit.session.jsonl)."""
_HOOK_DENIED = re.compile(r"PreToolUse:\S+ hook error: ")
_CLAUDE_CODE_DENIED = re.compile(
    r"Permission to use .* has been denied|Claude requested permissions to use "
    r"|The user doesn't want to proceed with this tool use", re.S)
_RULE = re.compile(r"\[rule (\S+)\]\s*$")
"""The rule id the gateway appends to a reason the model sees."""


class TranscriptReader:
    kind = "transcript"

    def __init__(self, cwd: str) -> None:
        self._cwd = cwd
        """The directory of the line being read; `--cwd` until a line names one."""
        self._pending: dict[str, tuple[ToolCall, str]] = {}

    def feed(self, where: str, line: Mapping[str, object]) -> Iterator[Item]:
        cwd = line.get("cwd")
        if isinstance(cwd, str) and cwd:
            self._cwd = cwd
        message = line.get("message")
        content = message.get("content") if isinstance(message, Mapping) else None
        if not isinstance(content, list):
            return
        kind = line.get("type")
        if kind == "assistant":
            yield from self._uses(where, line, content)
        elif kind == "user":
            yield from self._results(line, content)

    def finish(self) -> Iterator[Item]:
        """Calls whose result the transcript never recorded (the session ended first)."""
        for call, where in self._pending.values():
            yield Replayable(call, where)
        self._pending.clear()

    def _uses(self, where: str, line: Mapping[str, object], content: list[object]
              ) -> Iterator[Item]:
        for block in content:
            if not isinstance(block, Mapping) or block.get("type") != "tool_use":
                continue
            name, tool_input, use_id = block.get("name"), block.get("input"), block.get("id")
            if not isinstance(name, str) or not name or not isinstance(tool_input, dict):
                yield BadLine(where, "a tool_use block without a name or an input object")
                continue
            use_id = use_id if isinstance(use_id, str) else ""
            call = ToolCall(
                tool_name=TOOL_ALIASES.get(name, name),
                tool_input=cast(JSONObject, tool_input), tool_use_id=use_id,
                session_id=_text(line, "sessionId") or _text(line, "session_id"),
                cwd=self._cwd, agent_id=_text(line, "agentId"),
            )
            if not use_id:
                yield Replayable(call, where)  # no result can be told apart for it
            elif use_id not in self._pending:
                self._pending[use_id] = (call, where)
                if len(self._pending) > MAX_PENDING:
                    oldest = next(iter(self._pending))
                    yield Replayable(*self._pending.pop(oldest))

    def _results(self, line: Mapping[str, object], content: list[object]) -> Iterator[Item]:
        results = [b for b in content if isinstance(b, Mapping) and b.get("type") == "tool_result"]
        for block in results:
            use_id = block.get("tool_use_id")
            held = self._pending.pop(use_id, None) if isinstance(use_id, str) else None
            if held is not None:
                call, where = held
                line_level = line.get("permissionDecision") if len(results) == 1 else None
                yield Replayable(call, where, recorded_decision(line_level, line, block))


def recorded_decision(permission: object, line: Mapping[str, object],
                      result: Mapping[str, object]) -> Recorded:
    """Who decided a call and how, from its result's line (`permission`: the line's
    `permissionDecision`, when the line holds this result only)."""
    text = _result_text(result)
    found = _rule_in(text)
    if not isinstance(permission, Mapping):
        permission = _stream_json_permission(line, result.get("tool_use_id"))
    if isinstance(permission, Mapping):
        decision, source = permission.get("decision"), permission.get("source")
        code = permission.get("reasonCode", permission.get("reason_code"))
        if decision in ("accept", "reject"):
            if source == "hook":
                return Recorded("allow" if decision == "accept" else "deny", found)
            if isinstance(code, str) and code.startswith("hook:"):
                return Recorded("ask", found)
            return Recorded(RAN if decision == "accept" else CLAUDE_CODE_DENIED)
    if result.get("is_error") is True:
        if _HOOK_DENIED.match(text):
            return Recorded("deny", found)
        if _CLAUDE_CODE_DENIED.match(text):
            return Recorded(CLAUDE_CODE_DENIED)
    return Recorded(RAN)


def _stream_json_permission(line: Mapping[str, object], use_id: object) -> object:
    meta = line.get("tool_result_meta")
    if isinstance(meta, list):
        for entry in meta:
            if isinstance(entry, Mapping) and entry.get("id") == use_id:
                return entry.get("permission_decision")
    return None


def _result_text(result: Mapping[str, object]) -> str:
    content = result.get("content")
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(str(b.get("text", "")) for b in content
                         if isinstance(b, Mapping) and b.get("type") == "text")
    return ""


def _rule_in(text: str) -> str:
    found = _RULE.search(text[-300:])
    return found.group(1) if found else ""


def _text(line: Mapping[str, object], key: str) -> str:
    value = line.get(key)
    return value if isinstance(value, str) else ""
