"""What the HTTP endpoints do: hook events, readiness, remote runs. No aiohttp in here.

Unknown hook events get `{}` (HTTP 200): Claude Code reads an empty object as "no opinion",
and a newer Claude Code adding an event must not break sessions pointed at this gateway.
"""

from __future__ import annotations

import asyncio
import logging
import os
import tempfile
import time
from collections.abc import AsyncIterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from gateway.engine import Engine, deny
from gateway.errors import GatewayError
from gateway.hookio.parse import tool_call_from_input
from gateway.hookio.render import render_pre_tool_use
from gateway.policy import decide
from gateway.server.auth import Caller
from gateway.server.runs import parse_run_request, stream_run_lines
from gateway.server.tracing import ServerTracer
from gateway.trail import AuditExport
from gateway.types import Decision

log = logging.getLogger("gateway.server")

HookAnswer = dict[str, Any]


class GatewayService:
    """Hook answers per caller (its policy layers), spans, and remote runs."""

    def __init__(
        self,
        policy_paths: Sequence[str],
        tracer: ServerTracer | None = None,
        *,
        audit_log: Path | None = None,
        sink_ok: Any = None,
        audit_export: AuditExport | None = None,
    ) -> None:
        self._paths = tuple(policy_paths)
        self._tracer = tracer
        self._audit_log = audit_log
        self._audit_export = audit_export
        self._engines: dict[tuple[str, ...], Engine] = {}
        self._by_extra: dict[tuple[str, ...], Engine] = {}
        self._sink_ok = sink_ok
        self.engine_for(Caller(name="server"))  # the server's own policy must load now

    def engine_for(self, caller: Caller) -> Engine:
        engine = self._by_extra.get(caller.extra_policies)  # the common case, no tuple built
        if engine is None:
            layers = (*self._paths, *caller.extra_policies)
            engine = self._engines.get(layers)
            if engine is None:
                engine = self._engines[layers] = Engine(
                    layers, audit_log=self._audit_log, audit_export=self._audit_export
                )
            self._by_extra[caller.extra_policies] = engine
        return engine

    # --- hooks ------------------------------------------------------------------------------
    async def hook(self, event: str, body: Mapping[str, Any], caller: Caller) -> HookAnswer:
        try:
            engine = self.engine_for(caller)
        except GatewayError as exc:
            # The caller's layers do not load: nothing can be decided, so nothing may pass.
            log.error("policy for caller %s does not load: %s", caller.name, exc)
            return _cannot_decide(event, f"agent-gateway cannot load this caller's policy: {exc}")
        if event == "PreToolUse":
            return self._pre_tool_use(body, engine)
        if event in ("PostToolUse", "PostToolUseFailure"):
            self._post_tool_use(body, engine, failed=event == "PostToolUseFailure")
            return {}
        if event == "PreCompact":
            return await self._pre_compact(body, engine)
        if event == "SessionEnd" and self._tracer is not None:
            self._traced(self._tracer.on_session_end, body)
        return {}  # observed events (and unknown ones): no opinion

    def _pre_tool_use(self, body: Mapping[str, Any], engine: Engine) -> HookAnswer:
        _, decision, answer = engine.pre_tool_use(body)
        if decision.kind == "deny" and self._tracer is not None:
            self._traced(self._tracer.on_tool_denied, body, decision)
        return answer

    def _post_tool_use(self, body: Mapping[str, Any], engine: Engine, *, failed: bool) -> None:
        if self._tracer is None:
            return
        decision = self._recompute(body, engine)
        self._traced(self._tracer.on_tool_end, body, decision, failed)

    def _recompute(self, body: Mapping[str, Any], engine: Engine) -> Decision | None:
        """The PreToolUse decision again, with the same pure function on the same policy."""
        policy = engine.policy
        if policy is None:
            return None
        try:
            call = tool_call_from_input({**body, "hook_event_name": "PreToolUse"})
            return decide(policy, call)
        except Exception:  # a span attribute is not worth a failed hook
            return None

    async def _pre_compact(self, body: Mapping[str, Any], engine: Engine) -> HookAnswer:
        started = time.time_ns()
        # Archiving reads and writes the whole transcript: keep it off the event loop.
        outcome, answer = await asyncio.to_thread(engine.pre_compact, body)
        if self._tracer is not None:
            self._traced(
                self._tracer.on_compaction, body, started, outcome.archive_id, outcome.error
            )
        return answer

    def _traced(self, fn: Any, *args: Any) -> None:
        try:
            fn(*args)
        except Exception:  # tracing never changes a hook's answer
            log.exception("span for a hook event failed")

    # --- readiness --------------------------------------------------------------------------
    def readiness_problems(self) -> list[str]:
        problems: list[str] = []
        for layers, engine in list(self._engines.items()):
            try:
                if engine.policy is None:
                    problems.append(f"no policy loaded for {', '.join(layers) or '(none)'}")
            except Exception as exc:
                problems.append(f"policy {', '.join(layers)}: {' '.join(str(exc).split())}")
            if engine.reload_error:
                problems.append(f"policy reload failed: {engine.reload_error}")
        server = self._engines.get(self._paths)
        if server is not None:
            problem = _store_problem(server)
            if problem:
                problems.append(problem)
        if callable(self._sink_ok) and not self._sink_ok():
            problems.append("span export is failing")
        return problems

    # --- remote runs ------------------------------------------------------------------------
    def parse_run(self, body: Mapping[str, Any], caller: Caller) -> Any:
        return parse_run_request(body, (*self._paths, *caller.extra_policies))

    def stream_run(self, run: Any) -> AsyncIterator[bytes]:
        return stream_run_lines(run)


def _cannot_decide(event: str, reason: str) -> HookAnswer:
    reason = " ".join(reason.split())
    if event == "PreToolUse":
        return dict(render_pre_tool_use(deny(reason)))
    if event == "PreCompact":
        # Whether an archive is required is unknown: compaction must wait.
        return {"decision": "block", "reason": reason}
    return {}


def _store_problem(engine: Engine) -> str:
    """The local archive directory must be writable (an S3 store is checked when used)."""
    try:
        settings, _ = engine.compaction_settings()
    except Exception as exc:
        return f"compaction settings: {' '.join(str(exc).split())}"
    if not settings.archive or settings.store != "local":
        return ""
    from gateway.archive.store import local_root

    root = Path(local_root(settings, None))
    try:
        root.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile(dir=root, prefix=".readyz-"):
            pass
    except OSError as exc:
        return f"archive store {root} not writable: {exc.strerror or exc}"
    return "" if os.access(root, os.W_OK) else f"archive store {root} not writable"
