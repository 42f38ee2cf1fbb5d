"""`agent-gateway hook EVENT`: the Claude Code command-hook process contract, for
pre-tool-use and pre-compact, decided here or relayed to a gateway (`--remote`).

stdout gets the hook output JSON and the exit status is 0; when no decision can be made
(bad input, unreadable or invalid policy, internal error) the exit status is 2 with one line on
stderr, which Claude Code treats as a block. Never 1: Claude Code reads 1 as "run the tool".
The decision itself is the one every vantage point makes (handlers/decision.py).

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
    from gateway.compaction import CompactionSettings
    from gateway.handlers.deadline import Ticket
    from gateway.handlers.decision import PreToolUseAnswer
    from gateway.handlers.trail import AuditExport
    from gateway.policy.compiled import Policy

_EVENT_NAMES = {"pre-tool-use": "PreToolUse", "pre-compact": "PreCompact"}


HOOK_DEADLINE_S = 5.0
"""A PreToolUse command hook decides and records within this (its shell analysis and
hard-link searches have 2 s of it), else it records a deny and blocks; either way it has
answered within HOOK_DEADLINE_S + RECORD_GRACE_S, well inside the `timeout` the generated
settings give it (server/claude_settings.py COMMAND_HOOK_TIMEOUT_S)."""


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
        return _relay(event, remote, timeout_s, sandbox)
    if event == "pre-tool-use":
        return run_pre_tool_use(policy_paths, sys.stdin.buffer, sys.stdout, sys.stderr,
                                sandbox=sandbox)
    from gateway.handlers.compact import run_pre_compact_hook

    def load_settings() -> tuple[CompactionSettings, str]:
        if not policy_paths:
            from gateway.compaction import CompactionSettings

            return CompactionSettings(), ""
        from gateway.policy import load_policy

        policy = load_policy(policy_paths)
        return policy.compaction_settings(), policy.bundle_hash

    return run_pre_compact_hook(sys.stdin, sys.stdout, sys.stderr, load_settings)


def _relay(event: str, remote: str, timeout_s: float, sandbox: str) -> int:
    """Ask a gateway; a PreToolUse relay that overruns its wait (urllib's timeout is per
    socket operation: a server that trickles its answer is not bounded by it) blocks."""
    from gateway.handlers.deadline import DeadlineExceeded, alarm
    from gateway.handlers.remote import relay

    def ask() -> int:
        return relay(_EVENT_NAMES[event], remote, sys.stdin.buffer, sys.stdout, sys.stderr,
                     timeout_s=timeout_s, sandbox=sandbox)

    if event != "pre-tool-use":
        return ask()
    try:
        with alarm(timeout_s + RELAY_MARGIN_S):
            return ask()
    except DeadlineExceeded:
        return _block(sys.stderr, f"agent-gateway: blocked: no answer from {remote} within "
                      f"{timeout_s + RELAY_MARGIN_S:g} s")


RELAY_MARGIN_S = 1.0
"""The relay's whole exchange may take its --timeout plus this, then it blocks."""


def run_pre_tool_use(
    policy_paths: Sequence[str], stdin: IO[bytes] | IO[str], stdout: IO[str], stderr: IO[str],
    sandbox: str = "", *, deadline_s: float = HOOK_DEADLINE_S,
) -> int:
    """Exit 0 with the decision on stdout, or exit 2 with one line on stderr. Past
    `deadline_s` (a process alarm, gateway/handlers/deadline.py) the call is denied: recorded,
    exit 2."""
    from gateway.handlers.deadline import DeadlineExceeded, Ticket, alarm

    ticket = Ticket()
    got = _Progress()
    answer: PreToolUseAnswer | None = None
    try:
        with alarm(deadline_s, ticket):
            answer = _decide(policy_paths, stdin, sandbox, ticket, got)
    except DeadlineExceeded:
        pass
    except Exception as exc:  # the contract: any failure blocks, with a one-line reason
        return _block(stderr, f"agent-gateway: {one_line(exc, typed=True)}")
    if ticket.state == "recording" and answer is None:
        # Its own record did not finish within the grace: whether it was written is unknown.
        return _block(stderr, "agent-gateway could not write its audit log in time "
                      f"(its deadline is {deadline_s:g} s), so the call is blocked")
    if answer is None or ticket.state == "expired":
        answer = _deadline_deny(got, deadline_s)
    if got.trail is not None:
        try:
            got.trail.shutdown()  # bounded: the record is sent before the process exits
        except Exception:  # the decision is recorded; its copy never changes it
            import logging

            logging.getLogger("gateway.handlers").exception("audit record not exported")
    if answer.failure:
        return _block(stderr, answer.failure)
    stdout.write(json.dumps(answer.output) + "\n")
    stdout.flush()
    return EXIT_OK


class _Progress:
    """How far a decision got, for the deny its deadline gives: its input, policy, export."""

    raw: bytes | str | None = None
    policy: Policy | None = None
    trail: AuditExport | None = None


def _decide(
    policy_paths: Sequence[str], stdin: IO[bytes] | IO[str], sandbox: str, ticket: Ticket,
    got: _Progress,
) -> PreToolUseAnswer:
    from gateway.env import hook_log_export_requested
    from gateway.handlers.decision import answer_pre_tool_use

    got.raw = stdin.read()
    # A bad OTEL_* setting blocks before anything is recorded, like any other bad setting.
    got.trail = hook_export() if hook_log_export_requested() else None

    def policy() -> Policy:
        got.policy = cached_policy(policy_paths)
        return got.policy

    return answer_pre_tool_use(got.raw, policy, trail=got.trail, sandbox=sandbox,
                               claim=ticket.record)


def _deadline_deny(got: _Progress, deadline_s: float) -> PreToolUseAnswer:
    """Record the deny the deadline gives, itself bounded: a hook never outlives its timeout."""
    from gateway.handlers.deadline import RECORD_GRACE_S, DeadlineExceeded, alarm
    from gateway.handlers.decision import PreToolUseAnswer, deny_unanswered, fail_closed
    from gateway.hookio.render import render_deny

    reason = (f"agent-gateway: no decision within the command hook's {deadline_s:g} s "
              "deadline, so the call is denied")
    if got.raw is None:
        decision = fail_closed(f"{reason} (the hook input was not read in time)")
        return PreToolUseAnswer(decision, render_deny(decision.reason), failure=decision.reason)
    try:
        with alarm(RECORD_GRACE_S):
            return deny_unanswered(got.raw, reason, got.policy, trail=got.trail)
    except DeadlineExceeded:
        decision = fail_closed(f"{reason}; the deny could not be written to its audit log "
                               f"within {RECORD_GRACE_S:g} s more")
        return PreToolUseAnswer(decision, render_deny(decision.reason), failure=decision.reason)


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
    from gateway.handlers.trail import audit_export_from_env

    return audit_export_from_env(hook=True)
