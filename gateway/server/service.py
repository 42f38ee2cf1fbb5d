"""What the HTTP endpoints do: hook events, tenancy, readiness, remote runs. No aiohttp here.
The replies are hook_replies.py's, the readiness checks readiness.py's, the remote runs
remote_runs.py's.

Nothing blocking runs on the event loop. Decisions run in worker processes, in two lanes: small
hook inputs in one (a job running long there is niced and replaced, see workers.py), large
ones in another whose workers run niced from the start, so pathological inputs compete only
with each other. Each decision gets a budget; unanswered in time, it is a deny. Audit appends,
owner claims, policy loads and readiness checks run in a short-job thread pool; archiving in
its own pool.

Every hook request handled leaves one audit record, decided or not (audit_events.py).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import time
from collections.abc import AsyncIterator, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from gateway.audit.log import append_record, audit_path
from gateway.env import snapshot
from gateway.errors import GatewayError, HookInputError, one_line
from gateway.handlers.decision import PreToolUseAnswer, fail_closed
from gateway.handlers.engine import Engine
from gateway.handlers.trail import AuditExport
from gateway.handlers.turn_end import TURN_END_EVENTS, RecordedRefusals, record_turn_refusals
from gateway.hookio.events import BLOCKING_EVENTS
from gateway.hookio.parse import parse_pre_tool_use
from gateway.hookio.render import render_block, render_pre_tool_use
from gateway.policy.reload import INTERVAL_S, PolicyFiles
from gateway.runner.agent_env import remote_agent_env
from gateway.server import audit_events as ev
from gateway.server.audit_events import MODEL_REQUEST, TENANT_RULE
from gateway.server.bodies import JSONBody, decode_object
from gateway.server.budget_gate import BudgetGate
from gateway.server.decided import DecidedCalls
from gateway.server.decision_worker import (
    Decided,
    DecideRequest,
    Unloadable,
    WorkerError,
    WorkerInit,
    worker_main,
)
from gateway.server.hook_replies import (
    HookReply,
    bad_request,
    cannot_decide,
    deny_record,
)
from gateway.server.offload import Offload, cores
from gateway.server.owners import SessionOwners
from gateway.server.readiness import Notice, Readiness, audit_problem, store_problem
from gateway.server.remote_runs import RemoteRuns
from gateway.server.runs import (
    RunSpec,
)
from gateway.server.tenancy import OwnerStoreError, Tenancy, valid_session_id
from gateway.server.tracing import ServerTracer
from gateway.server.workers import JobFailed, JobTimeout, WorkerPool
from gateway.telemetry import metric_names as M
from gateway.telemetry.metrics import GatewayMetrics
from gateway.tenancy.tokens import Caller
from gateway.types import FAIL_CLOSED_RULE, JSON, Decision, JSONObject

if TYPE_CHECKING:
    pass

log = logging.getLogger("gateway.server")

DEFAULT_DECISION_BUDGET_S = 2.0
LARGE_INPUT = 8 * 1024
"""Hook inputs above this many bytes are decided in the lane for large inputs."""
DEMOTE_AFTER_S = 0.05
"""A decision in the small-input lane running this long is moved out of the way."""
WORKER_MEMORY_LIMIT = 512 * 1024**2
"""Address space per decision worker: a runaway analysis fails there (a deny), long before
it could take the replica's memory."""
WORKER_PRELOAD = ("gateway.server.private_forkserver", worker_main.__module__)
"""What the workers' forkserver imports before it forks any: first, what makes it private."""


class GatewayService:
    """Hook answers per caller (its policy layers and tenant), spans, and remote runs."""

    def __init__(
        self,
        policy_paths: Sequence[str],
        tracer: ServerTracer | None = None,
        *,
        audit_log: Path | None = None,
        sink_ok: Any = None,
        owners: SessionOwners | None = None,
        runs_roots: Sequence[str] = (),
        decision_budget_s: float = DEFAULT_DECISION_BUDGET_S,
        workers: int | None = None,
        audit_export: AuditExport | None = None,
        gate: BudgetGate | None = None,
        metrics: GatewayMetrics | None = None,
        agent_env: Mapping[str, str] | None = None,
    ) -> None:
        """`agent_env`: the environment remote runs' Claude Code gets (runner/agent_env.py);
        None: the allow-listed part of this process's own."""
        self._paths = tuple(policy_paths)
        self._files = PolicyFiles()
        """The policy texts in force here; a new decision worker starts from them."""
        self._poll: asyncio.Task[None] | None = None
        self._tracer = tracer
        self._audit_log = audit_log or audit_path()
        self._audit_export = audit_export
        self._engines: dict[tuple[str, ...], Engine] = {}
        self._decided_layers: dict[tuple[str, ...], None] = {}
        """Layer sets the workers have decided for: a new worker loads them before it serves."""
        self._unloadable: dict[tuple[str, ...], str] = {}
        """Callers' layer sets that do not load (their calls are denied), for /readyz."""
        self._enforced = DecidedCalls()
        self._refusals = RecordedRefusals()
        """PreToolUse decisions made here, for the tool spans of their PostToolUse."""
        self._sink_ok = sink_ok
        self.gate = gate
        """Team budgets (None: no caller has one)."""
        self.metrics = metrics or GatewayMetrics()
        self.metrics.observe_reload_errors(lambda: len(self._policy_warnings()))
        self.decision_budget_s = decision_budget_s
        self._offload = Offload()
        self.tenancy = Tenancy(owners, self._offload.io)
        runs_env = dict(agent_env if agent_env is not None else remote_agent_env(snapshot()))
        self.runs = RemoteRuns(
            tuple(runs_roots), runs_env, self._layers, self._offload.io, self.tenancy, gate,
            self.metrics, self.audit_refusal, self.decide_for_run,
        )
        self.engine_for(Caller(name="server"))  # the server's own policy must load now
        n = workers or cores()
        preload = WORKER_PRELOAD
        self._small = WorkerPool(
            worker_main, self._worker_init, size=n, budget_s=decision_budget_s,
            demote_after_s=DEMOTE_AFTER_S, preload=preload, name="agent-gateway-decide",
        )
        self._large = WorkerPool(
            worker_main, self._worker_init, size=n, budget_s=decision_budget_s, niceness=10,
            preload=preload, name="agent-gateway-decide-large",
        )

    async def start(self) -> None:
        await self._small.start()
        await self._large.start()
        if self.gate is not None:
            await self.gate.start()
        self._poll = asyncio.create_task(self._poll_policies())

    async def close(self) -> None:
        if self._poll is not None:
            self._poll.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._poll
        if self.gate is not None:
            await self.gate.close()
        await self._small.close()
        await self._large.close()
        self._offload.close()

    def engine_for(self, caller: Caller) -> Engine:
        """The caller's engine in this process (compaction settings, readiness); blocking."""
        layers = self._layers(caller)
        engine = self._engines.get(layers)
        if engine is None:
            engine = self._engines[layers] = Engine(
                layers, audit_log=self._audit_log, audit_export=self._audit_export,
                files=self._files,
            )
        return engine

    def policy_layers(self, caller: Caller) -> tuple[str, ...]:
        """The policy files that decide the caller's tool calls, org first."""
        return (*self._paths, *caller.extra_policies)

    def _layers(self, caller: Caller) -> tuple[str, ...]:
        layers = (*self._paths, *caller.extra_policies)
        if layers not in self._decided_layers and len(self._decided_layers) < 1024:
            self._decided_layers[layers] = None
        return layers

    def _worker_init(self) -> WorkerInit:
        return WorkerInit(
            env=snapshot(),
            cwd=os.getcwd(),
            audit_log=str(self._audit_log),
            memory_limit=WORKER_MEMORY_LIMIT,
            job_limit_s=self.decision_budget_s + 5,
            warm=tuple(dict.fromkeys([*self._engines, *self._decided_layers])),
            policy_texts=tuple(self._files.accepted().items()),
        )

    async def _poll_policies(self) -> None:
        """Follow the policy files as the workers do, so that a worker started now begins
        from what they have in force, and reloads are logged and shown once, here."""
        while True:
            await asyncio.sleep(INTERVAL_S)
            try:
                await self._offload.io(self._follow_policies)
            except Exception:  # never stops following; the next round tries again
                log.exception("following the policy files failed")

    def _follow_policies(self) -> None:
        for layers in list(self._decided_layers):
            with contextlib.suppress(GatewayError):  # a worker says why when it needs them
                self._files.texts(layers)
        for engine in list(self._engines.values()):
            engine.policy  # noqa: B018 (reloads when the files' texts in force changed)
        self._files.refresh({p for layers in list(self._decided_layers) for p in layers})

    # --- hooks ------------------------------------------------------------------------------
    async def hook(self, event: str, body: JSONObject, raw: bytes, caller: Caller,
                   sandbox: str = "") -> HookReply:
        """`sandbox`: the fingerprint of the OS sandbox the session's settings turned on."""
        named = body.get("hook_event_name")
        if named is not None and named != event:
            return await self.unreadable(
                event, body, caller, 400, f"hook_event_name {named!r} does not match {event}")
        session_id = body.get("session_id")
        if session_id is not None and not valid_session_id(session_id):
            return await self.unreadable(event, body, caller, 400,
                                         "session_id must be a printable string (max 256)")
        if event == "PreToolUse":
            try:
                parse_pre_tool_use(body)  # what the worker reads: a 400 here, not a 200 deny
            except HookInputError as exc:
                return await self.unreadable(event, body, caller, 400, one_line(exc))
        try:
            refusal = await self.tenancy.refusal(_text(session_id), caller.name)
        except OwnerStoreError as exc:
            return cannot_decide(event, 503, f"agent-gateway: {exc}")
        if refusal:
            await self.audit_refusal(event, body, caller, refusal)
            if event == "PreToolUse":
                self._count_decision(Decision("deny", TENANT_RULE, refusal), body, caller)
            return cannot_decide(event, 403, f"agent-gateway refused: {refusal}")
        if event == "PreToolUse":
            return await self._pre_tool_use(body, raw, caller, sandbox)
        if event in ("PostToolUse", "PostToolUseFailure"):
            # The decision enforced at PreToolUse, if this replica made it; never made again.
            decision = self._enforced.recall(
                caller.name, _text(body.get("session_id")), _text(body.get("tool_use_id"))
            )
            return await self._observed(event, body, caller, decision)
        if event == "PreCompact":
            return await self._pre_compact(body, caller)
        return await self._observed(event, body, caller)

    async def _decided(self, raw: bytes, caller: Caller, sandbox: str = "",
                       sandbox_unavailable: str = "") -> Decided | str:
        """A worker's decision (its record written), or why there is none (then the caller
        denies, and records the deny)."""
        pool = self._large if len(raw) > LARGE_INPUT else self._small
        layers = self._layers(caller)
        request = DecideRequest(layers, raw, caller.name, sandbox, sandbox_unavailable)
        try:
            reply = await pool.call(request)
        except JobTimeout:
            budget = f"{self.decision_budget_s:g} s"
            return (f"agent-gateway: no decision within the {budget} decision budget"
                    " (agent-gateway serve --decision-budget), so the call is denied")
        except JobFailed as exc:
            return f"agent-gateway could not decide: {exc}"
        if isinstance(reply, Unloadable):
            log.error("policy for caller %s does not load: %s", caller.name, reply.message)
            self._unloadable[layers] = reply.message
            return f"agent-gateway cannot load this caller's policy: {reply.message}"
        if not isinstance(reply, Decided):
            message = reply.message if isinstance(reply, WorkerError) else repr(reply)
            log.error("decision failed: %s", message)
            return f"agent-gateway could not decide: {message}"
        self._unloadable.pop(layers, None)
        return reply

    async def _pre_tool_use(self, body: JSONObject, raw: bytes, caller: Caller,
                            sandbox: str) -> HookReply:
        reply = await self._decided(raw, caller, sandbox)
        if isinstance(reply, str):
            return await self._deny(body, caller, reply)
        self._count_decision(reply.decision, body, caller)
        if self._tracer is not None and reply.decision.kind != "deny":
            # Before the answer: its PostToolUse may arrive as soon as the answer does.
            self._enforced.remember(
                caller.name, _text(body.get("session_id")), _text(body.get("tool_use_id")),
                reply.decision,
            )
        # The worker appended the audit record before it answered; what remains is copies
        # (the off-host export, the tool span, which starts now: a deny ends it), made once
        # the answer is on its way.
        return HookReply(200, reply.output, after=lambda: self._after_decision(body, reply))

    def _after_decision(self, body: JSONObject, reply: Decided) -> None:
        if self._audit_export is not None and reply.record is not None:
            self._audit_export.decision(reply.record)
        if self._tracer is not None:
            self._traced(self._tracer.on_pre_tool_use, body, reply.decision)

    async def _deny(self, body: JSONObject, caller: Caller, reason: str) -> HookReply:
        """A deny the workers could not record themselves: recorded here, then answered."""
        decision = fail_closed(reason)
        self._count_decision(decision, body, caller)
        try:
            await self._offload.io(self._append_deny, body, decision, caller)
        except Exception as exc:  # the deny stands, recorded or not
            log.error("audit log not writable, the deny stands: %s", one_line(exc, typed=True))
        after = None
        if self._tracer is not None:
            tracer = self._tracer
            after = lambda: self._traced(tracer.on_tool_denied, body, decision)  # noqa: E731
        return HookReply(200, render_pre_tool_use(decision), after=after)

    def _count_decision(self, decision: Decision, body: JSONObject, caller: Caller) -> None:
        tool = body.get("tool_name")
        self.metrics.decision(decision, tool if isinstance(tool, str) else "", caller.name)

    def _append_deny(self, body: JSONObject, decision: Decision, caller: Caller) -> None:
        self._append(deny_record(body, decision, caller))

    async def decide_for_run(self, caller: Caller, raw: bytes, body: Mapping[str, Any],
                             sandbox: str, sandbox_unavailable: str) -> PreToolUseAnswer:
        """A PreToolUse of a remote run (its loopback endpoint inside this process), decided
        as /hooks/PreToolUse is: by a worker, within the decision budget, a recorded deny when
        there is no answer. The run's own tracer, metrics and off-host copy take it from
        there (runner/hook_answers.py)."""
        reply = await self._decided(raw, caller, sandbox, sandbox_unavailable)
        if not isinstance(reply, str):
            return PreToolUseAnswer(reply.decision, reply.output, record=reply.record)
        decision = fail_closed(reply)
        record = None
        try:
            record = await self._offload.io(
                append_record, deny_record(body, decision, caller), self._audit_log
            )
        except Exception as exc:  # the deny stands, recorded or not
            log.error("audit log not writable, the deny stands: %s", one_line(exc, typed=True))
        return PreToolUseAnswer(decision, render_pre_tool_use(decision), record=record)

    async def _observed(
        self,
        event: str,
        body: JSONObject,
        caller: Caller,
        decision: Decision | None = None,
    ) -> HookReply:
        try:
            await self._offload.io(self._observe, event, body, caller, decision)
        except OSError as exc:
            log.error("audit log not writable: %s", exc)
            return HookReply(503, {"error": f"agent-gateway could not write its audit log: {exc}"})
        return HookReply(200, {})

    def _observe(
        self, event: str, body: JSONObject, caller: Caller, decision: Decision | None
    ) -> None:
        reason = f"{event} is observed: the gateway decides nothing for it"
        self._append(ev.event_record(event, body, caller.name, decision=ev.NONE, reason=reason))
        if event in TURN_END_EVENTS:
            try:
                engine = self.engine_for(caller)
            except GatewayError as exc:  # recorded all the same, with the built-in redaction
                log.error("policy for caller %s does not load: %s", caller.name, exc)
                engine = Engine((), audit_log=self._audit_log, audit_export=self._audit_export)
            record_turn_refusals(engine, body, self._refusals, tenant=caller.name)
        if self._tracer is None:
            return
        if event in ("PostToolUse", "PostToolUseFailure"):
            self._traced(
                self._tracer.on_tool_end, body, decision, event == "PostToolUseFailure"
            )
        else:
            self._traced(self._tracer.on_hook, event, body)

    async def _pre_compact(self, body: JSONObject, caller: Caller) -> HookReply:
        try:
            engine = await self._offload.io(self.engine_for, caller)
        except GatewayError as exc:
            # Whether an archive is required is unknown: compaction must wait.
            reason = f"agent-gateway cannot load this caller's policy: {exc}"
            log.error("policy for caller %s does not load: %s", caller.name, exc)
            self._unloadable[self._layers(caller)] = one_line(exc)
            await self._record_compaction(body, caller, ev.BLOCK, reason, "")
            self.metrics.compaction(str(body.get("trigger") or ""), M.ARCHIVE_BLOCKED, caller.name)
            return HookReply(200, render_block(" ".join(reason.split())))
        started = time.time_ns()
        answer = await self._offload.archive(engine.pre_compact, body)
        outcome = answer.outcome
        if outcome.blocked:
            decision, reason = ev.BLOCK, outcome.block_reason
        else:
            decision = ev.NONE
            reason = f"not archived: {outcome.error}" if outcome.error else (
                "archiving is off" if outcome.skipped else "archived"
            )
        await self._record_compaction(body, caller, decision, reason, outcome.archive_id)
        self.metrics.compaction(str(body.get("trigger") or ""), outcome.outcome, caller.name)
        if self._tracer is not None:
            self._traced(
                self._tracer.on_compaction, body, started, outcome.archive_id, outcome.error
            )
        return HookReply(200, answer.output)

    async def _record_compaction(
        self, body: JSONObject, caller: Caller, decision: str, reason: str, archive: str
    ) -> None:
        record = ev.event_record(
            "PreCompact", body, caller.name, decision=decision, reason=reason, archive_id=archive
        )
        try:
            await self._offload.io(self._append, record)
        except OSError as exc:
            log.error("audit log not writable: %s", exc)

    async def unreadable(self, event: str, body: JSONObject, caller: Caller, status: int,
                         message: str) -> HookReply:
        """A hook body the gateway will not read: the 4xx (a deny or block for the events
        that block), and for those its audit record, so no refused call goes unrecorded."""
        reply = bad_request(event, status, message)
        if event in BLOCKING_EVENTS:
            await self.audit_refusal(
                event, body, caller, f"agent-gateway could not read the hook input: {message}",
                rule_id=FAIL_CLOSED_RULE)
        return reply

    async def audit_refusal(
        self,
        event: str,
        body: JSONObject,
        caller: Caller,
        reason: str,
        *,
        rule_id: str = TENANT_RULE,
        cwd: str | None = None,
    ) -> None:
        decision = "deny" if event == "PreToolUse" else ev.REFUSED
        record = ev.event_record(
            event, body, caller.name, decision=decision, reason=reason, rule_id=rule_id, cwd=cwd,
        )
        try:
            await self._offload.io(self._append, record)
        except OSError as exc:
            log.error("audit log not writable, the refusal stands: %s", exc)

    def _append(self, record: Mapping[str, object]) -> None:
        """Every record the service writes itself, also sent to the off-host copy."""
        written = append_record(record, self._audit_log)
        if self._audit_export is not None:
            self._audit_export.decision(written)

    def _traced(self, fn: Any, *args: Any) -> None:
        try:
            fn(*args)
        except Exception:  # tracing never changes a hook's answer
            log.exception("span for a hook event failed")

    async def offload(self, fn: Any, *args: Any) -> Any:
        """Run a short blocking job (a metrics collection) in the short-job pool."""
        return await self._offload.io(fn, *args)

    async def offload_cpu(self, fn: Any, *args: Any) -> Any:
        """Run a long parse in a process of its own (it would hold the GIL: offload.py)."""
        return await self._offload.cpu(fn, *args)

    async def offload_parse(self, raw: bytes, content_encoding: str, limit: int) -> JSONBody:
        """Decode and parse a large or compressed body off the loop (BodyError as is)."""
        return await self._offload.io(decode_object, raw, content_encoding, limit)

    # --- the proxy --------------------------------------------------------------------------
    async def model_request_refusal(self, session_id: str, caller: Caller) -> str:
        """'' when the caller may send model requests for this session, else why not."""
        if not session_id or not self.tenancy.enabled:
            return ""
        if not valid_session_id(session_id):
            return "the session id header is not a printable string of at most 256 characters"
        try:
            refusal = await self.tenancy.refusal(session_id, caller.name)
        except OwnerStoreError as exc:
            return str(exc)
        if refusal:
            await self.audit_refusal(MODEL_REQUEST, {"session_id": session_id}, caller, refusal)
        return refusal

    # --- readiness --------------------------------------------------------------------------
    async def readiness(self) -> Readiness:
        return await self._offload.io(self._readiness)

    def _readiness(self) -> Readiness:
        problems: list[str] = []
        warnings = self._policy_warnings() + [
            Notice(text, (path,)) for path, text in self._files.notices()
        ]
        server = self._engines.get(self._paths)
        for problem in (
            store_problem(server) if server is not None else "",
            audit_problem(self._audit_log),
            self.tenancy.owners.problem() if self.tenancy.owners is not None else "",
        ):
            if problem:
                problems.append(problem)
        if callable(self._sink_ok) and not self._sink_ok():
            problems.append("span export is failing")
        return Readiness(problems, warnings)

    def _policy_warnings(self) -> list[Notice]:
        """Policy files whose change is not in force, policy sets that do not compile or load
        (also the reload_errors gauge)."""
        warnings: list[Notice] = []
        failed: dict[str, tuple[str, ...]] = {}
        for layers, engine in list(self._engines.items()):
            try:
                engine.policy  # noqa: B018 (checks the files and reloads when they changed)
            except Exception as exc:
                warnings.append(Notice(f"policy {', '.join(layers)}: {one_line(exc)}", layers))
            if engine.reload_error:
                failed.setdefault(engine.reload_error, layers)
        for problem in self._files.problems():
            failed.setdefault(str(problem), (problem.path,))
        for error, layers in failed.items():
            warnings.append(Notice(
                "policy reload failed, the last good policy stays in force: "
                f"{' '.join(error.split())}", layers,
            ))
        for layers, error in list(self._unloadable.items()):
            warnings.append(Notice(
                f"policy {', '.join(layers)} does not load, its callers' tool calls are denied: "
                f"{error}", layers,
            ))
        return warnings


    # --- remote runs (remote_runs.py) -------------------------------------------------------
    async def prepare_run(self, body: JSONObject, caller: Caller) -> RunSpec:
        """A run the caller may start, with `cwd` resolved; RunRefused (4xx) otherwise."""
        return await self.runs.prepare(body, caller)

    def stream_run(self, spec: RunSpec, caller: Caller) -> AsyncIterator[bytes]:
        """The run's NDJSON lines; its session is recorded as the caller's when it starts."""
        return self.runs.stream(spec, caller)


def _text(value: JSON) -> str:
    return value if isinstance(value, str) else ""
