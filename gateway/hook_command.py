"""`agent-gateway hook pre-tool-use`: the Claude Code command-hook contract.

stdout gets the hook output JSON and the exit status is 0; when no decision can be made
(bad input, unreadable or invalid policy, internal error) the exit status is 2 with one line on
stderr, which Claude Code treats as a block. Never 1: Claude Code reads 1 as "run the tool".
Import cost matters (150 ms per call, interpreter included): this path loads only the compiled
policy cache, the shell parser and the standard library; the OpenTelemetry SDK only when
OTEL_LOGS_EXPORTER asks for the decision's log record.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import IO, TYPE_CHECKING, Any

if TYPE_CHECKING:
    from gateway.trail import AuditExport

EXIT_OK = 0
EXIT_BLOCK = 2


def run_pre_tool_use(policy_paths: Sequence[str], stdin: IO[bytes] | IO[str], stdout: IO[str],
                     stderr: IO[str]) -> int:
    try:
        return _run(policy_paths, stdin, stdout)
    except Exception as exc:  # the contract: any failure blocks, with a one-line reason
        from gateway.errors import GatewayError

        message = str(exc) if isinstance(exc, GatewayError) else (
            f"internal error: {type(exc).__name__}: {exc}")
        stderr.write("agent-gateway: " + " ".join(message.split()) + "\n")
        stderr.flush()
        return EXIT_BLOCK


def _run(policy_paths: Sequence[str], stdin: IO[Any], stdout: IO[str]) -> int:
    from gateway.audit.log import append_decision
    from gateway.audit.record import policy_redactor
    from gateway.hookio.parse import parse_pre_tool_use
    from gateway.hookio.render import render_pre_tool_use
    from gateway.policy.cache import load_cached
    from gateway.policy.evaluate import decide
    from gateway.policy.protected import protected_paths
    from gateway.settings import cache_secret_path, gateway_home, hook_log_export_requested

    raw = stdin.read()
    call = parse_pre_tool_use(raw)
    policy = load_cached(policy_paths, gateway_home() / "cache", cache_secret_path(),
                         protected_paths(policy_paths))
    decision = decide(policy, call)
    # A bad OTEL_* setting blocks before anything is recorded, like any other bad setting.
    export = hook_export() if hook_log_export_requested() else None
    record = append_decision(call, decision, redactor=policy_redactor(policy))
    if export is not None:
        export.decision(record)
        export.shutdown()  # bounded: the record is sent before the process exits
    stdout.write(json.dumps(render_pre_tool_use(decision)) + "\n")
    stdout.flush()
    return EXIT_OK


def hook_export() -> AuditExport | None:
    """The log export of a hook process: synchronous, for the one record it emits."""
    from gateway.trail import audit_export_from_env

    return audit_export_from_env(hook=True)
