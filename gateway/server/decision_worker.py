"""The decision worker: a process that answers PreToolUse calls for the server (the one
decision path, handlers/decision.py, through a handlers.engine.Engine per caller's policy
layers), so that no Bash analysis ever runs on the server's event loop.

Why processes and not threads: tree-sitter holds the GIL for a whole parse (measured with
py-tree-sitter 0.26: a thread spinning beside a 5 s parse made no progress at all), so a slow
parse in a thread stalls every other request of the process. A worker process can instead be
niced when its job runs long and killed when the decision budget is spent.

A request is a `DecideRequest`; the reply is `Decided` (with the audit record written, for
the server to export as a log record: the OpenTelemetry SDK lives there), `Unloadable` when
the caller's policy layers do not load, or `WorkerError`.
"""

from __future__ import annotations

import contextlib
import logging
import os
import resource
import signal
import time
from collections.abc import Mapping
from dataclasses import dataclass
from multiprocessing.connection import Connection
from pathlib import Path
from typing import TYPE_CHECKING, NamedTuple

from gateway.errors import GatewayError, one_line
from gateway.handlers.engine import Engine
from gateway.policy.reload import PolicyFiles
from gateway.runner.private_process import make_private
from gateway.server.workers import serve_jobs
from gateway.types import Decision

if TYPE_CHECKING:
    from gateway.audit.record import AuditRecord
    from gateway.hookio.wire import PreToolUseOutput


@dataclass(frozen=True, slots=True)
class DecideRequest:
    layers: tuple[str, ...]
    """The caller's policy files, org first."""
    body: bytes
    """The hook input's JSON bytes."""
    tenant: str
    """The caller, recorded in the audit record."""
    sandbox: str = ""
    """The fingerprint of the OS sandbox the session's settings turned on ('' none)."""
    sandbox_unavailable: str = ""
    """Why the sandbox the policy requires could not start (a remote run knows; '' it could)."""


@dataclass(frozen=True, slots=True)
class Decided:
    decision: Decision
    output: PreToolUseOutput
    record: AuditRecord | None
    """The audit record written (None when nothing was: unreadable input, no audit log)."""


@dataclass(frozen=True, slots=True)
class Unloadable:
    """The caller's policy layers do not load; `message` says why."""

    message: str


@dataclass(frozen=True, slots=True)
class WorkerError:
    """The job failed in the worker (out of memory, a bug); `message` says how."""

    message: str


Reply = Decided | Unloadable | WorkerError


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
    policy_texts: tuple[tuple[str, bytes], ...] = ()
    """The policy files' texts the server has in force: a worker starts from them, never from
    a file that may be half-written as it starts (policy/reload.py)."""


def worker_main(conn: Connection, init: WorkerInit) -> None:
    make_private()  # it holds serve's environment (forked from a private forkserver: already)
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the server decides when workers stop
    logging.basicConfig(
        level=logging.WARNING, format="%(asctime)s %(name)s [decision worker] %(message)s"
    )
    os.environ.clear()
    os.environ.update(init.env)
    os.chdir(init.cwd)
    if init.memory_limit:
        resource.setrlimit(resource.RLIMIT_AS, (init.memory_limit, init.memory_limit))
    files = PolicyFiles(seed=dict(init.policy_texts))
    engines: dict[tuple[str, ...], Engine] = {}
    for layers in init.warm:
        with contextlib.suppress(GatewayError):  # reported when a request needs these layers
            engines[layers] = _engine(layers, init, files)

    def handle(request: DecideRequest) -> Reply:
        signal.setitimer(signal.ITIMER_REAL, init.job_limit_s)
        try:
            return _handle(engines, init, request, files)
        except MemoryError:
            return WorkerError(f"out of memory (limit {init.memory_limit // (1024 * 1024)} MiB)")
        except Exception as exc:  # an engine bug: the server answers with a deny
            return WorkerError(one_line(exc, typed=True))
        finally:
            signal.setitimer(signal.ITIMER_REAL, 0)

    serve_jobs(conn, handle)


def _handle(engines: dict[tuple[str, ...], Engine], init: WorkerInit, request: DecideRequest,
            files: PolicyFiles | None = None) -> Reply:
    files = files or PolicyFiles()
    layers = request.layers
    engine = engines.get(layers)
    if engine is None:
        failed = _FAILED.get(layers)
        if failed is not None and time.monotonic() - failed.at < RETRY_LOAD_S:
            return Unloadable(failed.message)
        try:
            engine = engines[layers] = _engine(layers, init, files)
        except GatewayError as exc:
            _FAILED[layers] = _LoadFailure(time.monotonic(), one_line(exc))
            return Unloadable(one_line(exc))
        _FAILED.pop(layers, None)
    answer = engine.pre_tool_use(request.body, audit_extra={"tenant": request.tenant},
                                 sandbox=request.sandbox,
                                 sandbox_unavailable=request.sandbox_unavailable)
    return Decided(answer.decision, answer.output, answer.record)


RETRY_LOAD_S = 0.5
"""Layers that did not load are tried again at most this often (as often as reloads)."""


class _LoadFailure(NamedTuple):
    at: float
    """time.monotonic() of the failed load."""
    message: str


_FAILED: dict[tuple[str, ...], _LoadFailure] = {}
"""Per layer set that did not load: when, and why."""


def _engine(layers: tuple[str, ...], init: WorkerInit, files: PolicyFiles) -> Engine:
    # No off-host copy here: the server exports the records its workers write.
    return Engine(layers, audit_log=Path(init.audit_log) if init.audit_log else None,
                  files=files)
