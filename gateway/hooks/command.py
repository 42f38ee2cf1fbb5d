"""`agent-gateway hook EVENT`: the Claude Code command-hook process contract, for
pre-tool-use and pre-compact, decided here or relayed to a gateway (`--remote`).

stdout gets the hook output JSON and the exit status is 0; when no decision can be made
(bad input, unreadable or invalid policy, internal error) the exit status is 2 with one line on
stderr, which Claude Code treats as a block. Never 1: Claude Code reads 1 as "run the tool".
The decision itself is the one every vantage point makes (hooks/decision.py).

Import cost matters (one process per tool call): this path loads only the compiled policy
cache, the shell parser and the standard library; the OpenTelemetry SDK only when
OTEL_LOGS_EXPORTER asks for the decision's log record.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Sequence
from typing import IO, TYPE_CHECKING

from gateway.errors import EXIT_BLOCK, EXIT_OK, one_line

if TYPE_CHECKING:
    from gateway.archive.config import CompactionSettings
    from gateway.hooks.trail import AuditExport
    from gateway.policy.compiled import Policy

_EVENT_NAMES = {"pre-tool-use": "PreToolUse", "pre-compact": "PreCompact"}


def run_hook(
    event: str,
    policy_paths: Sequence[str],
    remote: str | None = None,
    timeout_s: float = 10.0,
    sandbox: str = "",
) -> int:
    """`policy_paths` empty: AGENT_GATEWAY_POLICY's, as `gateway.query` and `run` read it.
    `sandbox`: the fingerprint of the OS sandbox the session's settings turned on."""
    if not policy_paths:
        from gateway.env import policy_paths_from_env

        policy_paths = policy_paths_from_env()
    if remote:
        from gateway.hooks.remote import relay

        return relay(
            _EVENT_NAMES[event],
            remote,
            sys.stdin.buffer,
            sys.stdout,
            sys.stderr,
            timeout_s=timeout_s,
            sandbox=sandbox,
        )
    if event == "pre-tool-use":
        return run_pre_tool_use(policy_paths, sys.stdin.buffer, sys.stdout, sys.stderr,
                                sandbox=sandbox)
    from gateway.hooks.compact import run_pre_compact_hook

    def load_settings() -> tuple[CompactionSettings, str]:
        if not policy_paths:
            from gateway.archive.config import CompactionSettings

            return CompactionSettings(), ""
        from gateway.policy import load_policy

        policy = load_policy(policy_paths)
        return policy.compaction_settings(), policy.bundle_hash

    return run_pre_compact_hook(sys.stdin, sys.stdout, sys.stderr, load_settings)


def run_pre_tool_use(
    policy_paths: Sequence[str], stdin: IO[bytes] | IO[str], stdout: IO[str], stderr: IO[str],
    sandbox: str = "",
) -> int:
    """Exit 0 with the decision on stdout, or exit 2 with one line on stderr."""
    try:
        return _run(policy_paths, stdin, stdout, stderr, sandbox)
    except Exception as exc:  # the contract: any failure blocks, with a one-line reason
        return _block(stderr, f"agent-gateway: {one_line(exc, typed=True)}")


def _run(
    policy_paths: Sequence[str], stdin: IO[bytes] | IO[str], stdout: IO[str], stderr: IO[str],
    sandbox: str,
) -> int:
    from gateway.env import hook_log_export_requested
    from gateway.hooks.decision import answer_pre_tool_use

    raw = stdin.read()
    # A bad OTEL_* setting blocks before anything is recorded, like any other bad setting.
    trail = hook_export() if hook_log_export_requested() else None
    answer = answer_pre_tool_use(raw, lambda: cached_policy(policy_paths), trail=trail,
                                 sandbox=sandbox)
    if trail is not None:
        try:
            trail.shutdown()  # bounded: the record is sent before the process exits
        except Exception:  # the decision is recorded; its copy never changes it
            import logging

            logging.getLogger("gateway.hooks").exception("audit record not exported")
    if answer.failure:
        return _block(stderr, answer.failure)
    stdout.write(json.dumps(answer.output) + "\n")
    stdout.flush()
    return EXIT_OK


def cached_policy(policy_paths: Sequence[str]) -> Policy:
    """The compiled policy from the home's authenticated cache (compiled and stored on a miss)."""
    from gateway.env import cache_secret_path, gateway_home
    from gateway.policy.cache import load_cached
    from gateway.policy.protected import protected_paths

    return load_cached(policy_paths, gateway_home() / "cache", cache_secret_path(),
                       protected_paths(policy_paths))


def _block(stderr: IO[str], line: str) -> int:
    stderr.write(" ".join(line.split()) + "\n")
    stderr.flush()
    return EXIT_BLOCK


def hook_export() -> AuditExport | None:
    """The log export of a hook process: synchronous, for the one record it emits."""
    from gateway.hooks.trail import audit_export_from_env

    return audit_export_from_env(hook=True)
