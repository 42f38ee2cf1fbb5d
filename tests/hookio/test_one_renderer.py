"""The deny and block answers have one renderer each (gateway.hookio.render): no other
module builds them, and every vantage point's answer comes out of it."""

from __future__ import annotations

import ast
import json
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from aiohttp.test_utils import make_mocked_request

import gateway.handlers.decision as decision_path
import gateway.hookio.render as render
from gateway.handlers.compact import answer_pre_compact
from gateway.handlers.engine import Engine
from gateway.runner.hook_answers import HookAnswers
from gateway.server.auth import _refuse
from gateway.server.hook_replies import bad_request, cannot_answer
from tests.handlers.test_fail_closed import (
    DENIED,
    VANTAGES,
    TracerSpy,
    _raise,
    answer,
    policy,
)

__all__ = ["policy"]  # the fixture, shared with the fail-closed tests

PACKAGE = Path(__file__).resolve().parents[2] / "gateway"
RENDERER = PACKAGE / "hookio" / "render.py"
TAG = " <rendered by gateway.hookio.render>"
RENDERERS = ("render_pre_tool_use", "render_deny", "render_block")


def _builds_an_answer(node: ast.AST) -> bool:
    """A dict literal (or item assignment) spelling a PreToolUse decision or a block."""
    if isinstance(node, ast.Dict):
        keys = [k.value for k in node.keys if isinstance(k, ast.Constant)]
        pairs = {k.value: v for k, v in zip(node.keys, node.values, strict=True)
                 if isinstance(k, ast.Constant)}
        block = pairs.get("decision")
        return ("permissionDecision" in keys
                or (isinstance(block, ast.Constant) and block.value == "block"))
    if isinstance(node, ast.Assign):
        pairs_assigned = [(t, node.value) for t in node.targets]
        pairs_assigned += [
            pair for t in node.targets
            if isinstance(t, ast.Tuple) and isinstance(node.value, ast.Tuple)
            for pair in zip(t.elts, node.value.elts, strict=False)
        ]
        for target, value in pairs_assigned:
            key = target.slice if isinstance(target, ast.Subscript) else None
            if isinstance(key, ast.Constant) and (key.value == "permissionDecision" or (
                    key.value == "decision"
                    and isinstance(value, ast.Constant) and value.value == "block")):
                return True
    return False


def test_no_other_module_builds_a_deny_or_block() -> None:
    builders = sorted(
        f"{path.relative_to(PACKAGE)}:{node.lineno}"
        for path in PACKAGE.rglob("*.py") if path != RENDERER
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
        if _builds_an_answer(node)
    )
    assert not builders, builders


def test_the_builder_check_sees_each_spelling() -> None:
    spelled = [
        '{"hookSpecificOutput": {"permissionDecision": "deny"}}',
        '{"decision": "block", "reason": r}',
        'body["decision"] = "block"',
        'out["permissionDecision"] = kind',
        'body["decision"], body["reason"] = "block", reason',
    ]
    for source in spelled:
        assert any(_builds_an_answer(n) for n in ast.walk(ast.parse(source))), source
    assert not any(_builds_an_answer(n) for n in ast.walk(ast.parse('{"decision": kind}')))


def _tagged(function: Callable[..., Any]) -> Callable[..., Any]:
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        out = json.loads(json.dumps(function(*args, **kwargs)))
        for holder in (out, out.get("hookSpecificOutput") or {}):
            for key in ("reason", "permissionDecisionReason"):
                if key in holder:
                    holder[key] += TAG
        return out
    return wrapper


@pytest.fixture
def tagged(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Every renderer, wherever it was imported, marks its output."""
    originals = {getattr(render, name): name for name in RENDERERS}
    for module in [m for m in list(sys.modules.values())
                   if m is not None and getattr(m, "__name__", "").startswith("gateway")]:
        for attr, value in list(vars(module).items()):
            if callable(value) and value in originals:
                monkeypatch.setattr(module, attr, _tagged(value))
    yield


@pytest.mark.parametrize("vantage", VANTAGES)
async def test_every_decision_hook_denies_through_the_renderer(
    vantage: str, policy: str, tagged: None
) -> None:
    decided, text = await answer(vantage, policy, DENIED)
    assert decided == "deny" and TAG in text, text


@pytest.mark.parametrize("vantage", ["sdk callback", "decision worker"])
async def test_a_failed_decision_denies_through_the_renderer(
    vantage: str, policy: str, tagged: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(decision_path, "decide", _raise)
    decided, text = await answer(vantage, policy, DENIED)
    assert decided == "deny" and TAG in text, text


def _shape(body: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in body.items() if k != "error"}


async def test_serve_refusals_come_from_the_renderer(tagged: None) -> None:
    for reply in (bad_request("PreToolUse", 400, "bad"), cannot_answer("PreToolUse", OSError())):
        reason = reply.body["hookSpecificOutput"]["permissionDecisionReason"]
        assert reason.endswith(TAG)
        assert _shape(dict(reply.body)) == {"hookSpecificOutput": {
            "hookEventName": "PreToolUse", "permissionDecision": "deny",
            "permissionDecisionReason": reason}}
    for reply in (bad_request("PreCompact", 400, "bad"), cannot_answer("PreCompact", OSError())):
        assert _shape(dict(reply.body)) == {"decision": "block", "reason": reply.body["reason"]}
        assert reply.body["reason"].endswith(TAG)
    assert "decision" not in cannot_answer("Stop", OSError()).body


@pytest.mark.parametrize(("event", "key"), [("PreToolUse", "hookSpecificOutput"),
                                            ("PreCompact", "decision")])
def test_an_unauthenticated_hook_is_refused_through_the_renderer(
    event: str, key: str, tagged: None
) -> None:
    request = make_mocked_request("POST", f"/hooks/{event}", match_info={"event": event})
    body = json.loads(_refuse(request).text or "{}")
    assert key in body and TAG in json.dumps(body), body


def test_pre_compact_blocks_through_the_renderer(tagged: None) -> None:
    answer = answer_pre_compact({}, _raise)
    assert answer.output["decision"] == "block"
    assert answer.output.get("reason", "").endswith(TAG)


async def test_run_blocks_compaction_through_the_renderer(
    policy: str, tagged: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    engine = Engine([policy])
    monkeypatch.setattr(engine, "pre_compact", _raise)
    output = await HookAnswers(engine, TracerSpy()).pre_compact(
        {"hook_event_name": "PreCompact", "trigger": "auto"})
    assert output["decision"] == "block" and output.get("reason", "").endswith(TAG)
    assert output.get("systemMessage")
