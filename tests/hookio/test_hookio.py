from __future__ import annotations

import json

import pytest

from gateway.errors import HookInputError
from gateway.hookio import parse_pre_tool_use, render_pre_tool_use
from gateway.types import Decision
from tests.fixtures import CLAUDE_CODE_RECORDINGS

RECORDED = CLAUDE_CODE_RECORDINGS / "hook-inputs.jsonl"
REAL_INPUT = (
    '{"session_id": "15c9d9c3", "transcript_path": "/home/dev/.claude/projects/x.jsonl", '
    '"cwd": "/srv/project", "prompt_id": "0d57", "permission_mode": "default", '
    '"effort": {"level": "medium"}, "hook_event_name": "PreToolUse", "tool_name": "Bash", '
    '"tool_input": {"command": "echo hi", "description": "say hi"}, "tool_use_id": "toolu_0000"}'
)


def test_parse_real_hook_input() -> None:
    call = parse_pre_tool_use(REAL_INPUT.encode())
    assert call.tool_name == "Bash"
    assert call.tool_input["command"] == "echo hi"
    assert (call.session_id, call.prompt_id, call.tool_use_id) == ("15c9d9c3", "0d57",
                                                                    "toolu_0000")
    assert call.cwd == "/srv/project"
    assert call.permission_mode == "default"


def test_parse_recorded_file() -> None:
    first = RECORDED.read_text().splitlines()[0]
    assert parse_pre_tool_use(first).tool_name == "Bash"


def test_subagent_fields() -> None:
    call = parse_pre_tool_use(json.dumps({
        "hook_event_name": "PreToolUse", "tool_name": "Read", "tool_input": {"file_path": "a"},
        "agent_id": "agent-1", "agent_type": "Explore"}))
    assert (call.agent_id, call.agent_type) == ("agent-1", "Explore")


@pytest.mark.parametrize(("raw", "message"), [
    (b"not json", "not JSON"), (b"[1]", "JSON object"), (b'{"tool_input": {}}', "tool_name"),
    (b'{"tool_name": "Bash", "tool_input": "rm"}', "tool_input must be"),
    (b'{"tool_name": "Bash", "hook_event_name": "PreCompact"}', "PreToolUse"),
    (b'{"tool_name": "Bash", "session_id": 5}', "session_id must be a string"),
    (b"\xff\xfe", "not JSON"),
])
def test_malformed_input(raw: bytes, message: str) -> None:
    with pytest.raises(HookInputError, match=message):
        parse_pre_tool_use(raw)


def test_render() -> None:
    assert render_pre_tool_use(Decision("abstain")) == {}
    assert render_pre_tool_use(Decision("abstain", "r1", "x", would_deny=True)) == {}
    out = render_pre_tool_use(Decision("deny", "no-rm", "Deleting is not allowed."))
    assert out == {"hookSpecificOutput": {
        "hookEventName": "PreToolUse", "permissionDecision": "deny",
        "permissionDecisionReason": "Deleting is not allowed. [rule no-rm]"}}
    allow = render_pre_tool_use(Decision("allow", "a", "", would_deny=True))
    assert allow["hookSpecificOutput"]["permissionDecision"] == "allow"
