"""The decision worker: a process that parses, decides and audits PreToolUse calls for the
server, so that no Bash analysis ever runs on the server's event loop.

Why processes and not threads: tree-sitter holds the GIL for a whole parse (measured with
py-tree-sitter 0.26: a thread spinning beside a 5 s parse made no progress at all), so a slow
parse in a thread stalls every other request of the process. A worker process can instead be
niced when its job runs long and killed when the decision budget is spent.

Requests are `(kind, layers, body, audit_extra)`; `body` is the hook input's JSON bytes.
Replies are `("ok", Decision | None, answer, records)` (the audit records written, for the
server to export as log records: the OpenTelemetry SDK lives there), `("unloadable",
message)` when the caller's policy layers do not load, or `("error", message)`.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import resource
import signal
import time
from collections.abc import Mapping
from dataclasses import dataclass
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any

from gateway.errors import GatewayError
from gateway.hookio.parse import tool_call_from_input
from gateway.hooks.engine import Engine
from gateway.policy import decide
from gateway.server.workers import serve_jobs

PRE_TOOL_USE = "pre_tool_use"
"""Decide, audit, render: what answers a PreToolUse hook."""
DECIDE = "decide"
"""The decision only (PostToolUse spans recompute it); nothing is audited."""

Request = tuple[str, tuple[str, ...], bytes, Mapping[str, Any]]
Reply = tuple[Any, ...]


@dataclass(frozen=True)
class WorkerInit:
    env: Mapping[str, str]
    """The server's environment when the worker was started (AGENT_GATEWAY_HOME, ...)."""
    cwd: str
    audit_log: str
    memory_limit: int
    """Bytes of address space; 0 for no limit."""
    job_limit_s: float
    """A job running this long ends the process by itself (SIGALRM's default action), a
    backstop for a worker whose server is gone."""
    warm: tuple[tuple[str, ...], ...] = ()
    """Policy layer sets to load before the worker says it is ready."""


def worker_main(conn: Connection, init: WorkerInit) -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the server decides when workers stop
    logging.basicConfig(
        level=logging.WARNING, format="%(asctime)s %(name)s [decision worker] %(message)s"
    )
    os.environ.clear()
    os.environ.update(init.env)
    os.chdir(init.cwd)
    if init.memory_limit:
        resource.setrlimit(resource.RLIMIT_AS, (init.memory_limit, init.memory_limit))
    engines: dict[tuple[str, ...], Engine] = {}
    for layers in init.warm:
        with contextlib.suppress(GatewayError):  # reported when a request needs these layers
            engines[layers] = _engine(layers, init)

    def handle(request: Request) -> Reply:
        kind, layers, body, extra = request
        signal.setitimer(signal.ITIMER_REAL, init.job_limit_s)
        try:
            return _handle(engines, init, kind, layers, body, extra)
        except MemoryError:
            return ("error", f"out of memory (limit {init.memory_limit // (1024 * 1024)} MiB)")
        except Exception as exc:  # an engine bug: the server answers with a deny
            return ("error", f"{type(exc).__name__}: {' '.join(str(exc).split())}")
        finally:
            signal.setitimer(signal.ITIMER_REAL, 0)

    serve_jobs(conn, handle)


def _handle(
    engines: dict[tuple[str, ...], Engine],
    init: WorkerInit,
    kind: str,
    layers: tuple[str, ...],
    body: bytes,
    extra: Mapping[str, Any],
) -> Reply:
    engine = engines.get(layers)
    if engine is None:
        failed = _FAILED.get(layers)
        if failed is not None and time.monotonic() - failed[0] < RETRY_LOAD_S:
            return ("unloadable", failed[1])
        try:
            engine = engines[layers] = _engine(layers, init)
        except GatewayError as exc:
            _FAILED[layers] = (time.monotonic(), " ".join(str(exc).split()))
            return ("unloadable", _FAILED[layers][1])
        _FAILED.pop(layers, None)
    data = json.loads(body)
    if kind == PRE_TOOL_USE:
        _WRITTEN.records.clear()
        _, decision, answer = engine.pre_tool_use(data, audit_extra=extra)
        return ("ok", decision, answer, tuple(_WRITTEN.records))
    policy = engine.policy
    if policy is None:
        return ("ok", None, {})
    try:
        call = tool_call_from_input({**data, "hook_event_name": "PreToolUse"})
    except GatewayError:
        return ("ok", None, {})
    return ("ok", decide(policy, call), {})


RETRY_LOAD_S = 0.5
"""Layers that did not load are tried again at most this often (as often as reloads)."""
_FAILED: dict[tuple[str, ...], tuple[float, str]] = {}


class _Written:
    """Collects the audit records an engine writes during one job."""

    def __init__(self) -> None:
        self.records: list[dict[str, Any]] = []

    def decision(self, record: Mapping[str, Any]) -> None:
        self.records.append(dict(record))

    def archive(self, manifest: Mapping[str, Any], store: str) -> None:
        """Workers never archive."""


def _engine(layers: tuple[str, ...], init: WorkerInit) -> Engine:
    return Engine(layers, audit_log=_path(init.audit_log), audit_export=_WRITTEN)


_WRITTEN = _Written()


def _path(value: str) -> Path | None:
    return Path(value) if value else None
