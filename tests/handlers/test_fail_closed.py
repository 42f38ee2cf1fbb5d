"""Failure injection on the decision path, at each step and from each vantage point.

The attack: a tool call the policy denies (`rm -rf x`) while some step of answering it
fails. Before the decision is rendered (parse, policy load, evaluation, audit, render), a
failure must yield a deny (the command hook: exit 2); after it (the off-host copy, tracing),
the decision must stand: a deny stays a deny, and an allow stays an allow.

Vantage points: the command hook (in process), the SDK callback of `agent-gateway run`, and
the decision worker behind `serve`'s HTTP hook (its job function, in process; the service's
own steps are in tests/server/test_fail_closed.py).
"""

from __future__ import annotations

import io
import json
import logging
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

import gateway.handlers.decision as decision_path
from gateway.handlers.command import run_pre_tool_use
from gateway.handlers.engine import Engine
from gateway.hookio.wire import PreToolUseOutput
from gateway.policy.reload import PolicyHolder
from gateway.runner.callbacks import pre_tool_use_callback
from gateway.runner.hook_answers import HookAnswers
from gateway.server.decision_worker import Decided, DecideRequest, WorkerInit, _handle
from gateway.types import Decision

POLICY = "version: 1\npermissions:\n  deny: ['Bash(rm:*)']\n  allow: ['Bash(ls:*)']\n"
DENIED, ALLOWED = "rm -rf x", "ls -la"


class Boom(RuntimeError):
    """An injected failure (a bug, a full disk, a broken exporter)."""


def _raise(*_args: Any, **_kwargs: Any) -> Any:
    raise Boom("injected failure\nsecond line")


def hook_input(command: str) -> dict[str, Any]:
    return {"hook_event_name": "PreToolUse", "tool_name": "Bash",
            "tool_input": {"command": command}, "session_id": "s1", "tool_use_id": "toolu_1",
            "cwd": "/srv/project"}


def permission(output: PreToolUseOutput | dict[str, Any]) -> str | None:
    specific = output.get("hookSpecificOutput")
    return specific.get("permissionDecision") if isinstance(specific, dict) else None


@pytest.fixture
def policy(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    monkeypatch.setenv("AGENT_GATEWAY_HOME", str(tmp_path / "home"))
    path = tmp_path / "org.yaml"
    path.write_text(POLICY)
    return str(path)


class ExportSpy:
    """A trail sink that raises on every record, and counts them."""

    def __init__(self) -> None:
        self.calls = 0

    def decision(self, record: Any) -> None:
        self.calls += 1
        raise Boom("collector down")

    def archive(self, manifest: Any, store: str) -> None:
        raise Boom("collector down")


# --- the vantage points, each answering one hook input with a permission decision ----------
Answer = Callable[[str, str, Any], tuple[str | None, str]]
"""(policy path, command, trail) -> (permissionDecision or None for a block, what was said)."""


def command_hook(policy: str, command: str, trail: Any) -> tuple[str | None, str]:
    out, err = io.StringIO(), io.StringIO()
    stdin = io.BytesIO(json.dumps(hook_input(command)).encode())
    if trail is not None:
        import gateway.handlers.command as command_module

        with pytest.MonkeyPatch.context() as patch:
            patch.setattr(command_module, "hook_export", lambda: _Closing(trail))
            patch.setenv("OTEL_LOGS_EXPORTER", "console")
            code = run_pre_tool_use([policy], stdin, out, err)
    else:
        code = run_pre_tool_use([policy], stdin, out, err)
    if code == 2:
        assert out.getvalue() == "" and err.getvalue().count("\n") == 1, err.getvalue()
        return None, err.getvalue()
    assert code == 0, (code, err.getvalue())
    return permission(json.loads(out.getvalue())), out.getvalue()


class _Closing:
    """The command hook's export: a trail with a shutdown."""

    def __init__(self, trail: Any) -> None:
        self._trail = trail

    def decision(self, record: Any) -> None:
        self._trail.decision(record)

    def archive(self, manifest: Any, store: str) -> None:
        self._trail.archive(manifest, store)

    def shutdown(self) -> None:
        raise Boom("flush failed")


class TracerSpy:
    def __init__(self, fail: bool = False) -> None:
        self.fail = fail
        self.seen: list[Decision | None] = []

    def transcript(self, path: str | None) -> None:
        if self.fail:
            raise Boom("tracer broke")

    def pre_tool_use(self, tool_use_id: str, tool_name: str, decision: Decision | None) -> None:
        self.seen.append(decision)
        if self.fail:
            raise Boom("tracer broke")

    def compacted(self, archive_id: str | None, error: str | None, trigger: str | None) -> None:
        if self.fail:
            raise Boom("tracer broke")


async def sdk_callback(policy: str, command: str, trail: Any,
                       tracer: TracerSpy | None = None) -> tuple[str | None, str]:
    engine = Engine([policy], audit_export=trail)
    callback = pre_tool_use_callback(HookAnswers(engine, tracer or TracerSpy()))
    output = await callback(hook_input(command), "toolu_1", {"signal": None})  # type: ignore[arg-type]
    return permission(dict(output)), json.dumps(output)


def decision_worker(policy: str, command: str, trail: Any) -> tuple[str | None, str]:
    init = WorkerInit(env={}, cwd="/", audit_log="", memory_limit=0, job_limit_s=10)
    reply = _handle({}, init, DecideRequest((policy,), json.dumps(hook_input(command)).encode(),
                                            "team-a"))
    assert isinstance(reply, Decided), reply
    return permission(reply.output), json.dumps(reply.output)


async def answer(vantage: str, policy: str, command: str, trail: Any = None,
                 tracer: TracerSpy | None = None) -> tuple[str | None, str]:
    if vantage == "command hook":
        return command_hook(policy, command, trail)
    if vantage == "sdk callback":
        return await sdk_callback(policy, command, trail, tracer)
    return decision_worker(policy, command, trail)


VANTAGES = ["command hook", "sdk callback", "decision worker"]


def blocked(permission_decision: str | None) -> bool:
    """A deny, or (the command hook) exit 2: either way the tool does not run."""
    return permission_decision in (None, "deny")


@pytest.mark.parametrize("vantage", VANTAGES)
async def test_without_failures_the_policy_decides(vantage: str, policy: str) -> None:
    assert (await answer(vantage, policy, DENIED))[0] == "deny"
    assert (await answer(vantage, policy, ALLOWED))[0] == "allow"


# --- before the decision is rendered: a failure is a deny ----------------------------------
STEPS_BEFORE = {
    "parse": ("parse_pre_tool_use", "could not read the hook input"),
    "decide": ("decide", "could not decide"),
    "audit": ("append_decision", "could not write its audit log"),
    "render": ("render_pre_tool_use", "could not render its answer"),
}


@pytest.mark.parametrize("vantage", VANTAGES)
@pytest.mark.parametrize("step", sorted(STEPS_BEFORE))
@pytest.mark.parametrize("command", [DENIED, ALLOWED])
async def test_a_failure_before_the_answer_denies(
    vantage: str, step: str, command: str, policy: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    name, said = STEPS_BEFORE[step]
    monkeypatch.setattr(decision_path, name, _raise)
    decided, text = await answer(vantage, policy, command)
    assert blocked(decided), (vantage, step, text)
    assert said in text and "injected failure second line" in text
    assert "Traceback" not in text


@pytest.mark.parametrize("vantage", VANTAGES)
async def test_a_policy_that_cannot_be_loaded_denies(
    vantage: str, policy: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    import gateway.handlers.command as command_module

    if vantage == "command hook":
        monkeypatch.setattr(command_module, "cached_policy", _raise)
    else:
        # A long-running process loaded it once; then reading it again fails.
        monkeypatch.setattr(PolicyHolder, "current", _raise)
    decided, text = await answer(vantage, policy, ALLOWED)
    assert blocked(decided) and "cannot load its policy" in text, text


@pytest.mark.parametrize("vantage", VANTAGES)
async def test_an_audit_log_that_cannot_be_written_denies(
    vantage: str, policy: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    home = tmp_path / "home"
    home.mkdir()
    (home / "audit.jsonl").mkdir()  # a directory where the log should be: no append succeeds
    decided, text = await answer(vantage, policy, ALLOWED)
    assert blocked(decided) and "could not write its audit log" in text, text


# --- after the decision is recorded: it stands ----------------------------------------------
@pytest.mark.parametrize("vantage", ["command hook", "sdk callback"])
@pytest.mark.parametrize(("command", "expected"), [(DENIED, "deny"), (ALLOWED, "allow")])
async def test_a_failing_export_never_changes_the_decision(
    vantage: str, command: str, expected: str, policy: str, caplog: pytest.LogCaptureFixture
) -> None:
    trail = ExportSpy()
    with caplog.at_level(logging.ERROR):
        decided, _ = await answer(vantage, policy, command, trail)
    assert decided == expected and trail.calls == 1
    assert "not exported" in caplog.text


@pytest.mark.parametrize(("command", "expected"), [(DENIED, "deny"), (ALLOWED, "allow")])
async def test_a_failing_tracer_never_changes_the_decision(
    command: str, expected: str, policy: str, caplog: pytest.LogCaptureFixture
) -> None:
    tracer = TracerSpy(fail=True)
    with caplog.at_level(logging.ERROR):
        decided, _ = await sdk_callback(policy, command, None, tracer)
    assert decided == expected
    assert "tracing a hook event failed" in caplog.text


async def test_the_tracer_is_told_the_decision_enforced(policy: str) -> None:
    tracer = TracerSpy()
    await sdk_callback(policy, DENIED, None, tracer)
    (seen,) = tracer.seen
    assert seen is not None and seen.kind == "deny" and seen.rule_id.endswith("deny[1]")


async def test_an_sdk_callback_whose_engine_raises_denies(
    policy: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(Engine, "pre_tool_use", _raise)
    decided, text = await sdk_callback(policy, ALLOWED, None)
    assert decided == "deny" and "could not decide" in text


def test_a_command_hook_whose_stdin_fails_exits_2(policy: str) -> None:
    class Broken(io.BytesIO):
        def read(self, *_args: Any) -> bytes:
            raise OSError("stdin went away")

    out, err = io.StringIO(), io.StringIO()
    assert run_pre_tool_use([policy], Broken(), out, err) == 2
    assert out.getvalue() == "" and "stdin went away" in err.getvalue()


def test_a_decide_failure_is_recorded_as_the_deny_it_is(
    policy: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(decision_path, "decide", _raise)
    out, err = io.StringIO(), io.StringIO()
    stdin = io.BytesIO(json.dumps(hook_input(ALLOWED)).encode())
    assert run_pre_tool_use([policy], stdin, out, err) == 2
    (line,) = (tmp_path / "home" / "audit.jsonl").read_text().splitlines()
    record = json.loads(line)
    assert (record["decision"], record["rule_id"]) == ("deny", "gateway.fail-closed")
