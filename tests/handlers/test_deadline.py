"""A hook that overruns is a hook that allowed: every decision ends by a hard deadline, and
the deny given there is recorded. The command hook's deadline is a process alarm (SIGALRM);
here the decision is made slow at each step, the audit append included, and the log must
hold exactly the answer given, verify, and take the next append without an alarm. A run's
decisions (its http hook endpoint, gateway.query's callbacks) are made off its event loop
within their own deadline."""

from __future__ import annotations

import asyncio
import fcntl
import io
import json
import os
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import gateway.audit.log as audit_log
import gateway.handlers.command as command_module
import gateway.handlers.deadline as deadline
import gateway.handlers.decision as decision_module
from gateway.audit import verify_log
from gateway.handlers.command import run_pre_tool_use
from gateway.handlers.deadline import DeadlineExceeded, Ticket, alarm
from gateway.handlers.engine import Engine
from gateway.runner.callbacks import attach_hooks
from gateway.runner.hook_answers import HookAnswers
from gateway.types import FAIL_CLOSED_RULE

POLICY = "version: 1\npermissions:\n  deny: ['Bash(rm:*)']\n  allow: ['Bash(ls:*)']\n"
DEADLINE_S = 0.3
GRACE_S = 0.4


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("AGENT_GATEWAY_HOME", str(tmp_path / "home"))
    monkeypatch.setattr(deadline, "RECORD_GRACE_S", GRACE_S)
    return tmp_path / "home"


@pytest.fixture
def policy(tmp_path: Path, home: Path) -> str:
    path = tmp_path / "org.yaml"
    path.write_text(POLICY)
    return str(path)


def hook_input(command: str, tool_use_id: str = "toolu_1") -> dict[str, Any]:
    return {"hook_event_name": "PreToolUse", "tool_name": "Bash",
            "tool_input": {"command": command}, "session_id": "s1",
            "tool_use_id": tool_use_id, "cwd": "/srv/project"}


def hook(policy: str, command: str = "ls -la") -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    stdin = io.BytesIO(json.dumps(hook_input(command)).encode())
    code = run_pre_tool_use([policy], stdin, out, err, deadline_s=DEADLINE_S)
    return code, out.getvalue(), err.getvalue()


def records(home: Path) -> list[dict[str, Any]]:
    log = home / "audit.jsonl"
    return [json.loads(line) for line in log.read_text().splitlines()] if log.exists() else []


def sleeping(seconds: float, then: Any = None) -> Any:
    def slow(*args: Any, **kwargs: Any) -> Any:
        time.sleep(seconds)
        return then(*args, **kwargs) if then is not None else None

    return slow


def assert_log_goes_on(home: Path, policy: str) -> None:
    """The log verifies, and the next decision is recorded without an alarm."""
    report = verify_log(home / "audit.jsonl")
    assert report.finding is None, report.finding
    code, out, _ = hook(policy, "rm -rf next")
    assert code == 0 and '"deny"' in out
    report = verify_log(home / "audit.jsonl")
    assert report.finding is None, report.finding
    checkpoint = json.loads((home / "audit.jsonl.checkpoint").read_text())
    assert "alarm" not in checkpoint


def assert_one_deadline_deny(home: Path) -> dict[str, Any]:
    (record,) = records(home)
    assert record["decision"] == "deny" and record["rule_id"] == FAIL_CLOSED_RULE
    assert "deadline" in record["reason"] and record["tool_use_id"] == "toolu_1"
    return record


# --- the command hook: the alarm at each step -----------------------------------------------
def test_an_ordinary_decision_is_untouched(policy: str, home: Path) -> None:
    code, out, _err = hook(policy)
    assert code == 0 and json.loads(out)["hookSpecificOutput"]["permissionDecision"] == "allow"
    assert [r["decision"] for r in records(home)] == ["allow"]


def test_a_slow_evaluation_is_denied_and_recorded(
    policy: str, home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(decision_module, "decide", sleeping(30))
    started = time.monotonic()
    code, out, err = hook(policy)
    assert code == 2 and out == "" and "0.3 s deadline" in err and err.count("\n") == 1
    assert time.monotonic() - started < 10  # not the 30 s the decision wanted
    record = assert_one_deadline_deny(home)
    assert record["policy"]  # the policy had loaded: its redaction and hash are used
    monkeypatch.undo()
    monkeypatch.setenv("AGENT_GATEWAY_HOME", str(home))
    assert_log_goes_on(home, policy)


def test_a_slow_policy_load_is_denied_and_recorded(
    policy: str, home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(command_module, "cached_policy", sleeping(30))
    code, _, err = hook(policy)
    assert code == 2 and "deadline" in err
    assert assert_one_deadline_deny(home)["policy"] == ""


def test_a_slow_input_is_blocked(policy: str, home: Path) -> None:
    class Trickle(io.BytesIO):
        def read(self, *_: Any) -> bytes:
            time.sleep(30)
            return b"{}"

    out, err = io.StringIO(), io.StringIO()
    assert run_pre_tool_use([policy], Trickle(), out, err, deadline_s=DEADLINE_S) == 2
    assert "not read in time" in err.getvalue() and records(home) == []


@pytest.mark.parametrize("where", ["before the record", "before the confirmation"])
def test_a_record_write_slower_than_the_grace_blocks_and_leaves_a_sound_log(
    policy: str, home: Path, monkeypatch: pytest.MonkeyPatch, where: str
) -> None:
    """Inside the audit append, the lock held: the handler writes nothing, the append is
    unwound (nothing or the announced record is left) and the hook blocks."""
    hook(policy, "rm -rf first")  # a log with a record and a checkpoint
    if where == "before the record":
        monkeypatch.setattr(audit_log, "_write_whole", sleeping(30, audit_log._write_whole))
    else:
        writes = {"n": 0}
        original = audit_log._write_checkpoint

        def slow_confirmation(path: Path, data: bytes) -> None:
            writes["n"] += 1
            if writes["n"] == 2:
                time.sleep(30)
            original(path, data)

        monkeypatch.setattr(audit_log, "_write_checkpoint", slow_confirmation)
    code, out, err = hook(policy)
    assert code == 2 and out == "" and "could not write its audit log in time" in err
    monkeypatch.undo()
    monkeypatch.setenv("AGENT_GATEWAY_HOME", str(home))
    kept = [r["tool_use_id"] for r in records(home)]
    assert kept == (["toolu_1"] if where == "before the record" else ["toolu_1", "toolu_1"])
    assert_log_goes_on(home, policy)


def test_a_record_that_finishes_within_the_grace_is_the_answer(
    policy: str, home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The deadline finds the decision recording itself (waiting for the log's lock, held by
    another writer): the recording finishes within the grace, and its decision is answered,
    recorded once."""
    hook(policy, "rm -rf first")
    holder = os.open(home / "audit.jsonl", os.O_RDWR)
    fcntl.flock(holder, fcntl.LOCK_EX)
    threading.Timer(DEADLINE_S + GRACE_S / 2, os.close, [holder]).start()
    code, out, _ = hook(policy)
    assert code == 0 and json.loads(out)["hookSpecificOutput"]["permissionDecision"] == "allow"
    assert [r["decision"] for r in records(home)] == ["deny", "allow"]
    assert_log_goes_on(home, policy)


def test_a_lock_held_past_the_grace_blocks_unrecorded(policy: str, home: Path) -> None:
    hook(policy, "rm -rf first")
    holder = os.open(home / "audit.jsonl", os.O_RDWR)
    fcntl.flock(holder, fcntl.LOCK_EX)
    try:
        code, _out, err = hook(policy)
    finally:
        os.close(holder)
    assert code == 2 and "could not write its audit log in time" in err
    assert len(records(home)) == 1
    assert_log_goes_on(home, policy)


def test_the_deadlines_deny_is_itself_bounded(
    policy: str, home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A decision too slow, then its deny's record too: the hook still ends, blocking."""
    monkeypatch.setattr(decision_module, "decide", sleeping(30))
    monkeypatch.setattr(decision_module, "append_decision", sleeping(30))
    started = time.monotonic()
    code, _, err = hook(policy)
    assert code == 2 and "could not be written to its audit log" in err
    assert time.monotonic() - started < 10


# --- the ticket and the alarm ---------------------------------------------------------------
def test_exactly_one_of_the_decision_and_its_deadline_answers() -> None:
    early = Ticket()
    assert early.expire() and not early.record() and early.state == "expired"
    late = Ticket()
    assert late.record() and not late.expire() and late.state == "recording"


def test_the_alarm_leaves_nothing_armed() -> None:
    import signal

    before = signal.getsignal(signal.SIGALRM)
    with alarm(5):
        pass
    with pytest.raises(DeadlineExceeded), alarm(0.05):
        time.sleep(5)
    assert signal.getsignal(signal.SIGALRM) == before
    assert signal.getitimer(signal.ITIMER_REAL) == (0.0, 0.0)


# --- a run's decisions: off the loop, within their deadline ---------------------------------
@pytest.fixture
def engine(policy: str) -> Iterator[Engine]:
    yield Engine([policy])


class Quiet:
    def transcript(self, path: str | None) -> None: ...

    def pre_tool_use(self, tool_use_id: str, tool_name: str, decision: Any) -> None: ...

    def compacted(self, archive_id: str | None, error: str | None, trigger: str | None
                  ) -> None: ...


async def _answer_while_ticking(answers: HookAnswers, command: str) -> tuple[Any, int]:
    """The answer, and how often the loop ran a 10 ms tick meanwhile."""
    ticks = 0

    async def tick() -> None:
        nonlocal ticks
        while True:
            await asyncio.sleep(0.01)
            ticks += 1

    ticker = asyncio.ensure_future(tick())
    try:
        output = await answers.pre_tool_use(hook_input(command))
    finally:
        ticker.cancel()
    return output, ticks


async def test_a_runs_slow_decision_is_denied_recorded_and_never_recorded_late(
    engine: Engine, home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(decision_module, "decide", sleeping(1.0, decision_module.decide))
    answers = HookAnswers(engine, Quiet(), deadline_s=DEADLINE_S)
    output, ticks = await _answer_while_ticking(answers, "ls")
    specific = output["hookSpecificOutput"]
    assert specific["permissionDecision"] == "deny" and "deadline" in specific[
        "permissionDecisionReason"]
    assert ticks >= 3  # the loop kept running while the decision did
    assert_one_deadline_deny(home)
    await asyncio.sleep(1.2)  # the abandoned decision finishes: it must not record itself
    assert_one_deadline_deny(home)


async def test_a_runs_decision_in_time_is_answered(engine: Engine, home: Path) -> None:
    answers = HookAnswers(engine, Quiet(), deadline_s=5)
    output, _ = await _answer_while_ticking(answers, "rm -rf x")
    assert output["hookSpecificOutput"]["permissionDecision"] == "deny"
    assert [r["rule_id"] for r in records(home)] == ["org.yaml:permissions.deny[1]"]


def test_gateway_query_callbacks_set_their_timeout_and_block_on_failure(engine: Engine) -> None:
    from gateway.runner.attachments import Attachments

    attachments = Attachments()
    attach_hooks(attachments, HookAnswers(engine, Quiet()))
    for event, timeout in (("PreToolUse", 60), ("PreCompact", 300)):
        (matcher,) = attachments.hooks[event]
        assert (matcher.timeout, matcher.on_failure) == (timeout, "block")


# --- the relay (--remote): its whole exchange is bounded -------------------------------------
def test_a_relay_to_a_gateway_that_trickles_its_answer_blocks(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """urllib's timeout bounds each socket operation: a byte every 0.1 s never trips it."""
    import socket

    from gateway.handlers.command import run_hook

    server = socket.create_server(("127.0.0.1", 0))
    stop = threading.Event()

    def trickle() -> None:
        conn, _ = server.accept()
        with conn:
            conn.recv(65536)
            for byte in b"HTTP/1.1 200 OK\r\nX-Slow: " + b"a" * 300:
                if stop.is_set():
                    return
                conn.sendall(bytes([byte]))
                time.sleep(0.1)

    threading.Thread(target=trickle, daemon=True).start()
    stdin = io.TextIOWrapper(io.BytesIO(json.dumps(hook_input("ls")).encode()))
    monkeypatch.setattr("sys.stdin", stdin)
    started = time.monotonic()
    try:
        code = run_hook("pre-tool-use", [], remote=f"http://127.0.0.1:{server.getsockname()[1]}",
                        timeout_s=0.5)
    finally:
        stop.set()
        server.close()
    assert code == 2 and "no answer from" in capsys.readouterr().err
    assert time.monotonic() - started < 10
