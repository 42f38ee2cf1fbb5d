"""Remote runs (`POST /v1/runs`) as `serve` starts them: whether the caller may start one
there (its runs roots, the session it resumes, its team's budget), each refusal audited, and
the run's stream claimed for the caller's tenant as soon as its session is known."""

from __future__ import annotations

import functools
import json
import logging
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from gateway.errors import one_line
from gateway.handlers.decision import PreToolUseAnswer
from gateway.server.audit_events import BUDGET_RULE, REMOTE_RUN, TENANT_RULE
from gateway.server.budget_gate import BudgetGate
from gateway.server.runs import (
    RunRefused,
    RunSpec,
    confine_cwd,
    parse_run_request,
    stream_run_lines,
)
from gateway.server.tenancy import OwnerStoreError, Tenancy, valid_session_id
from gateway.telemetry.metrics import GatewayMetrics
from gateway.tenancy.tokens import Caller
from gateway.types import JSONObject

if TYPE_CHECKING:
    from gateway.runner.account import RunAccount

log = logging.getLogger("gateway.server")

RUNS_OFF = (
    "remote runs are off on this gateway: start it with `agent-gateway serve --runs-root DIR` "
    "(or give this token runs_roots in the tokens file)"
)

AuditRefusal = Callable[..., Awaitable[None]]
"""GatewayService.audit_refusal: (event, body, caller, reason, *, rule_id, cwd)."""
DecideForRun = Callable[[Caller, bytes, Mapping[str, Any], str, str], Awaitable[PreToolUseAnswer]]
"""GatewayService.decide_for_run: a run's PreToolUse decided by serve's workers."""


@dataclass
class RemoteRuns:
    roots: tuple[str, ...]
    """The runs roots of callers whose token names none."""
    agent_env: Mapping[str, str]
    """The environment the runs' Claude Code gets (runner/agent_env.py)."""
    layers: Callable[[Caller], tuple[str, ...]]
    io: Callable[..., Awaitable[Any]]
    """The short-job pool (resolving the run's directory)."""
    tenancy: Tenancy
    gate: BudgetGate | None
    metrics: GatewayMetrics
    audit_refusal: AuditRefusal
    decide: DecideForRun

    async def prepare(self, body: JSONObject, caller: Caller) -> RunSpec:
        """A run the caller may start, with `cwd` resolved; RunRefused (4xx) otherwise."""
        try:
            return await self._prepare(body, caller)
        except RunRefused as exc:
            if exc.status in (402, 403):
                resume, cwd = body.get("resume"), body.get("cwd")
                await self.audit_refusal(
                    REMOTE_RUN,
                    {"session_id": resume if isinstance(resume, str) else ""},
                    caller,
                    str(exc),
                    rule_id=BUDGET_RULE if exc.status == 402 else TENANT_RULE,
                    cwd=cwd if isinstance(cwd, str) else "",
                )
            raise

    async def _prepare(self, body: JSONObject, caller: Caller) -> RunSpec:
        roots = caller.runs_roots if caller.runs_roots is not None else self.roots
        if not roots:
            raise RunRefused(403, RUNS_OFF)
        try:
            spec = parse_run_request(body, self.layers(caller))
        except ValueError as exc:
            raise RunRefused(400, one_line(exc)) from None
        cwd = spec.options.get("cwd")
        if not cwd:
            raise RunRefused(400, "'cwd' is required: a directory inside one of the runs roots")
        real = await self.io(confine_cwd, cwd, roots)
        if self.gate is not None:
            model = spec.options.get("model")
            over = await self.gate.check_run(caller, model if isinstance(model, str) else None)
            if over is not None:
                raise RunRefused(402, over.message)
        resume = spec.options.get("resume")
        if resume:
            if not valid_session_id(resume):
                raise RunRefused(400, "'resume' must be a printable string (max 256)")
            try:
                refusal = await self.tenancy.refusal(resume, caller.name)
            except OwnerStoreError as exc:
                raise RunRefused(503, str(exc)) from None
            if refusal:
                verb = "fork" if spec.options.get("fork_session") else "resume"
                raise RunRefused(403, f"cannot {verb}: {refusal}")
        return replace(spec, options={**spec.options, "cwd": real})

    async def stream(self, spec: RunSpec, caller: Caller) -> AsyncIterator[bytes]:
        """The run's NDJSON lines; its session is recorded as the caller's when it starts."""
        claimed = not self.tenancy.enabled
        decide = functools.partial(self.decide, caller)
        async for chunk in stream_run_lines(spec, self.agent_env, self._run_account(caller),
                                            decide):
            if not claimed and (session_id := _session_id_of(chunk)):
                claimed = True
                try:
                    refusal = await self.tenancy.refusal(session_id, caller.name)
                except OwnerStoreError as exc:
                    refusal = str(exc)
                if refusal:  # a new session that is somebody else's: never stream it
                    log.error("remote run stopped: %s", refusal)
                    yield (json.dumps({"type": "gateway_error", "error": refusal}) + "\n").encode()
                    return
            yield chunk

    def _run_account(self, caller: Caller) -> RunAccount:
        """A remote run counts against its caller's team: serve's metrics, the team's budget
        (checked in prepare for a 402; again as it starts, to cap --max-budget-usd at what
        is left; charged what the run cost when it ends)."""
        from gateway.runner.account import RunAccount
        from gateway.runner.budget import RunBudget

        budget = None
        if self.gate is not None and caller.budget:
            budget = RunBudget(caller.name, caller.budget, self.gate, owns_store=False)
        return RunAccount(team=caller.name, metrics=self.metrics, budget=budget)


def _session_id_of(chunk: bytes) -> str:
    for line in chunk.splitlines():
        try:
            message = json.loads(line)
        except ValueError:
            continue
        session_id = message.get("session_id") if isinstance(message, dict) else None
        if valid_session_id(session_id):
            return str(session_id)
    return ""
