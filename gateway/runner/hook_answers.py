"""The gateway's answers to PreToolUse and PreCompact in the runs it starts, whichever way
Claude Code asks (an SDK callback, runner/callbacks.py; an http hook on the run's loopback
endpoint, runner/hook_endpoint.py): the shared decision functions (handlers/decision.py,
handlers/compact.py, held by a handlers.engine.Engine), then the run's tracer, observers
and metrics.

Inside `serve` (a remote run) PreToolUse is decided by serve's decision workers instead
(`decide`, GatewayService.decide_for_run): the same decision path in a process of its own,
with serve's decision budget, so that no analysis runs on serve's event loop.

Fail closed: nothing here raises. An exception before the answer is a deny (a block), and
tracing after it never changes it. Imports no claude_agent_sdk.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import queue
import threading
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

from gateway.errors import one_line
from gateway.handlers.compact import PreCompactAnswer
from gateway.handlers.deadline import RECORD_GRACE_S, Ticket
from gateway.handlers.decision import PreToolUseAnswer, TrailSink
from gateway.handlers.engine import Engine
from gateway.hookio.render import render_block, render_deny
from gateway.hookio.wire import PreCompactOutput, PreToolUseOutput
from gateway.runner.attachments import Observer
from gateway.types import Decision

if TYPE_CHECKING:
    from gateway.telemetry.metrics import GatewayMetrics

log = logging.getLogger("gateway.runner.callbacks")

HookData = Mapping[str, Any]
Decide = Callable[[bytes, HookData, str, str], Awaitable[PreToolUseAnswer]]
"""Decides a PreToolUse elsewhere (serve's workers) and records it: (the hook input's
bytes, the input, the sandbox's fingerprint, why the sandbox cannot start) -> the answer."""
T = TypeVar("T")

DECISION_DEADLINE_S = 5.0
"""A run's PreToolUse decisions (its http hook, whose timeout is 60 s, and gateway.query's
callbacks, 60 s) are answered within this, plus RECORD_GRACE_S to record a deny."""


class HookTracer(Protocol):
    """What the answers tell the run's tracer (gateway.runner.tracer.RunTracer)."""

    def transcript(self, path: str | None) -> None: ...

    def pre_tool_use(self, tool_use_id: str, tool_name: str, decision: Decision | None) -> None: ...

    def compacted(self, archive_id: str | None, error: str | None, trigger: str | None) -> None: ...


class HookCounts:
    """The run's metrics of its own hook events (decisions, compactions, hook durations)."""

    def __init__(self, metrics: GatewayMetrics | None = None, team: str = "") -> None:
        self.metrics = metrics
        self.team = team

    def decided(self, tool_name: str, decision: Decision, started: float) -> None:
        if self.metrics is not None:
            self.metrics.decision(decision, tool_name, self.team)
            self.metrics.hook("PreToolUse", time.perf_counter() - started)

    def compacted(self, trigger: str, outcome: str, started: float) -> None:
        if self.metrics is not None:
            self.metrics.compaction(trigger, outcome, self.team)
            self.metrics.hook("PreCompact", time.perf_counter() - started)


@dataclass
class HookAnswers:
    """One run's answers: its engine, and who hears about each one."""

    engine: Engine
    tracer: HookTracer
    observers: Sequence[Observer] = ()
    counts: HookCounts = field(default_factory=HookCounts)
    sandbox: str = ""
    """The fingerprint of the OS sandbox the run's Claude Code was started with ('' none)."""
    sandbox_unavailable: str = ""
    """Why the sandbox the policy requires could not start for this run ('' it could)."""
    decide: Decide | None = None
    """Where PreToolUse is decided when not by `engine` in this process (a remote run)."""
    trail: TrailSink | None = None
    """The off-host copy of the records `decide` writes (the engine copies its own)."""
    deadline_s: float = DECISION_DEADLINE_S
    """A decision not made within this is denied (recorded); well inside the hook timeout."""
    _decider: _DecisionThread = field(default_factory=lambda: _DecisionThread(), init=False,
                                      repr=False)

    async def pre_tool_use(self, data: HookData, tool_use_id: str | None = None
                           ) -> PreToolUseOutput:
        """Decided here, by the engine (the SDK callbacks of `gateway.query`)."""
        started = time.perf_counter()
        try:
            answer = await self._decided(dict(data))
        except Exception as exc:  # the decision path does not raise; if it ever does: deny
            log.exception("PreToolUse not answered")
            return render_deny(f"agent-gateway could not decide: {one_line(exc, typed=True)}")
        _observe(lambda: self.engine.export_decision(answer.record))
        return self._told(data, tool_use_id, answer, started)

    async def pre_tool_use_raw(self, data: HookData, raw: bytes) -> PreToolUseOutput:
        """The http hook's: `raw` is the body `data` was read from. With `decide`, decided
        there (serve's workers, under their own budget); else here."""
        if self.decide is None:
            return await self.pre_tool_use(data)
        started = time.perf_counter()
        try:
            answer = await self.decide(raw, data, self.sandbox, self.sandbox_unavailable)
        except Exception as exc:  # `decide` denies what it cannot decide; if it raises: deny
            log.exception("PreToolUse not answered")
            return render_deny(f"agent-gateway could not decide: {one_line(exc, typed=True)}")
        trail, record = self.trail, answer.record
        if trail is not None and record is not None:
            _observe(lambda: trail.decision(record))
        return self._told(data, None, answer, started)

    def _told(self, data: HookData, tool_use_id: str | None, answer: PreToolUseAnswer,
              started: float) -> PreToolUseOutput:
        """The answer, once the tracer, the observers and the metrics have heard of it."""
        _observe(lambda: _trace_tool(self.tracer, self.observers, data, tool_use_id, answer))
        name = answer.call.tool_name if answer.call else str(data.get("tool_name", ""))
        _observe(lambda: self.counts.decided(name, answer.decision, started))
        return answer.output

    async def _decided(self, raw: dict[str, Any]) -> PreToolUseAnswer:
        """The decision, made off the event loop (which the run's messages and its other hooks
        need) by the time its deadline passes; else the deadline's recorded deny. Decisions
        run one at a time, as they did on the loop; waiting for the one before counts."""
        ticket = Ticket()
        decision = self._decider.submit(lambda: self.engine.pre_tool_use(
            raw, sandbox=self.sandbox, sandbox_unavailable=self.sandbox_unavailable,
            claim=ticket.record, export=False))
        try:
            return await asyncio.wait_for(asyncio.shield(decision), self.deadline_s)
        except TimeoutError:
            pass
        if not ticket.expire():  # it is recording itself: that is the answer
            return await asyncio.wait_for(decision, RECORD_GRACE_S)
        reason = (f"agent-gateway: no decision within the {self.deadline_s:g} s deadline, so "
                  "the call is denied")
        log.error("PreToolUse: %s", reason)
        return await asyncio.wait_for(
            _in_thread(lambda: self.engine.deny_unanswered(raw, reason, export=False)),
            RECORD_GRACE_S)

    async def pre_compact(self, data: HookData) -> PreCompactOutput:
        started = time.perf_counter()
        try:
            # Archiving waits for the transcript to settle: keep the event loop free meanwhile.
            answer = await asyncio.to_thread(self.engine.pre_compact, dict(data))
            output: PreCompactOutput = answer.output
            if answer.outcome.blocked:
                # Claude Code reports a blocking SDK callback only as "[callback]"; a system
                # message is how the reason reaches the stream.
                output = {**output, "systemMessage": answer.outcome.block_reason}
        except Exception as exc:  # whether the archive was required cannot be known: block
            log.exception("PreCompact not answered")
            reason = f"agent-gateway: compaction blocked: {one_line(exc, typed=True)}"
            return {**render_block(reason), "systemMessage": reason}
        _observe(lambda: _trace_compaction(self.tracer, self.observers, data, answer))
        trigger = str(data.get("trigger") or "")
        _observe(lambda: self.counts.compacted(trigger, answer.outcome.outcome, started))
        return output


class _DecisionThread:
    """One daemon thread that makes a run's decisions in turn, started on first use (a
    thread per decision cost 0.3 to 0.8 ms each here). A daemon: a decision its deadline
    gave up on never holds the process's exit up."""

    def __init__(self) -> None:
        self._jobs: queue.SimpleQueue[tuple[Callable[[], Any], _Settle]] = queue.SimpleQueue()
        self._thread: threading.Thread | None = None

    def submit(self, fn: Callable[[], T]) -> asyncio.Future[T]:
        future, settle = _future()
        if self._thread is None:
            self._thread = threading.Thread(target=self._serve, name="agent-gateway-decide",
                                            daemon=True)
            self._thread.start()
        self._jobs.put((fn, settle))
        return future

    def _serve(self) -> None:
        while True:
            fn, settle = self._jobs.get()
            _run(fn, settle)


_Settle = Callable[[Any, BaseException | None], None]


def _in_thread(fn: Callable[[], T]) -> asyncio.Future[T]:
    """`fn()` on a daemon thread of its own: the deadline's deny, which must not wait behind
    the decision it replaces."""
    future, settle = _future()
    threading.Thread(target=_run, args=(fn, settle), name="agent-gateway-deny",
                     daemon=True).start()
    return future


def _future() -> tuple[asyncio.Future[Any], _Settle]:
    """A future of the running loop, and how another thread settles it."""
    loop = asyncio.get_running_loop()
    future: asyncio.Future[Any] = loop.create_future()

    def on_loop(result: Any, error: BaseException | None) -> None:
        if future.done():  # given up on
            return
        if error is not None:
            future.set_exception(error)
        else:
            future.set_result(result)

    def settle(result: Any, error: BaseException | None) -> None:
        with contextlib.suppress(RuntimeError):  # the loop has closed: nobody waits
            loop.call_soon_threadsafe(on_loop, result, error)

    return future, settle


def _run(fn: Callable[[], Any], settle: _Settle) -> None:
    try:
        result = fn()
    except BaseException as exc:
        settle(None, exc)
    else:
        settle(result, None)


def _trace_tool(
    tracer: HookTracer,
    observers: Sequence[Observer],
    data: HookData,
    tool_use_id: str | None,
    answer: PreToolUseAnswer,
) -> None:
    tracer.transcript(str(data.get("transcript_path") or ""))
    call = answer.call
    call_id = call.tool_use_id if call else str(tool_use_id or data.get("tool_use_id") or "")
    name = call.tool_name if call else str(data.get("tool_name", ""))
    tracer.pre_tool_use(call_id, name, answer.decision)
    tool_input = data.get("tool_input")
    for observer in observers:
        observer.decided(
            call_id, name, tool_input if isinstance(tool_input, dict) else {}, answer.decision
        )


def _trace_compaction(
    tracer: HookTracer, observers: Sequence[Observer], data: HookData, answer: PreCompactAnswer
) -> None:
    tracer.transcript(str(data.get("transcript_path") or ""))
    outcome = answer.outcome
    tracer.compacted(
        outcome.archive_id or None, outcome.error or None, str(data.get("trigger") or "") or None
    )
    for observer in observers:
        observer.archived(outcome.archive_id, outcome.error, outcome.blocked)


def _observe(step: Callable[[], None]) -> None:
    try:
        step()
    except Exception:  # tracing never changes an answer
        log.exception("tracing a hook event failed; the answer stands")
