"""`agent-gateway hook EVENT`: the Claude Code command-hook process contract, for every event
the gateway needs (hookio/events.py GATEWAY_EVENTS), handled here or relayed to a gateway
(`--remote`).

pre-tool-use and pre-compact: stdout gets the hook output JSON and the exit status is 0; when
no decision can be made (bad input, unreadable or invalid policy, internal error) the exit
status is 2 with one line on stderr, which Claude Code treats as a block. Never 1: Claude Code
reads 1 as "run the tool". The decision itself is the one every vantage point makes
(handlers/decision.py).

The observed events never block (exit 2 at Stop would keep the agent going): what fails is
said on stderr with exit 1, which Claude Code reports and goes on. Here, each is noted in the
session's trace journal; at a turn's end Claude Code's own refusals of the turn are recorded
(handlers/turn_end.py) and the trace is built (server/local_trace.py).

Import cost matters (one process per tool call): this path loads only the compiled policy
cache, the shell parser and the standard library; the OpenTelemetry SDK only when
OTEL_LOGS_EXPORTER asks for the decision's log record.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

from gateway.errors import EXIT_BLOCK, EXIT_OK, one_line
from gateway.hookio.events import BLOCKING_EVENTS, COMMAND_EVENTS, command_name

BLOCKING = frozenset(command_name(e) for e in BLOCKING_EVENTS)

if TYPE_CHECKING:
    from gateway.compaction import CompactionSettings
    from gateway.handlers.deadline import Ticket
    from gateway.handlers.decision import PreToolUseAnswer
    from gateway.handlers.trail import AuditExport
    from gateway.policy.compiled import Policy

EXIT_NOT_RECORDED = 1
"""An observed event that could not be handled: Claude Code says so and goes on."""


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
    build_trace: TraceBuilder | None = None,
) -> int:
    """`policy_paths` empty: AGENT_GATEWAY_POLICY's, as `gateway.query` and `run` read it.
    `sandbox`: the fingerprint of the OS sandbox the session's settings turned on;
    `build_trace`: what builds the trace at a turn's end (none: the events are only noted)."""
    from gateway.env import adopt_hook_otel_env, policy_paths_from_env

    adopt_hook_otel_env()
    if not policy_paths:
        policy_paths = policy_paths_from_env()
    if remote:
        return _relay(event, remote, timeout_s, sandbox)
    if event == "pre-tool-use":
        return run_pre_tool_use(policy_paths, sys.stdin.buffer, sys.stdout, sys.stderr,
                                sandbox=sandbox)
    if event != "pre-compact":
        return run_observed(COMMAND_EVENTS[event], policy_paths, sys.stdin.buffer, sys.stderr,
                            build_trace=build_trace)
    from gateway.handlers.compact import run_pre_compact_hook

    def load_settings() -> tuple[CompactionSettings, str]:
        if not policy_paths:
            from gateway.compaction import CompactionSettings

            return CompactionSettings(), ""
        from gateway.policy import load_policy

        policy = load_policy(policy_paths)
        return policy.compaction_settings(), policy.bundle_hash

    return run_pre_compact_hook(sys.stdin, sys.stdout, sys.stderr, load_settings,
                                observe=_note_compaction)


def _relay(event: str, remote: str, timeout_s: float, sandbox: str) -> int:
    """Ask a gateway; a PreToolUse relay that overruns its wait (urllib's timeout is per
    socket operation: a server that trickles its answer is not bounded by it) blocks."""
    from gateway.handlers.deadline import DeadlineExceeded, alarm
    from gateway.handlers.remote import relay

    def ask() -> int:
        return relay(COMMAND_EVENTS[event], remote, sys.stdin.buffer, sys.stdout, sys.stderr,
                     timeout_s=timeout_s, sandbox=sandbox,
                     failed=EXIT_BLOCK if event in BLOCKING else EXIT_NOT_RECORDED)

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
    _note_decision(answer)
    if answer.failure:
        return _block(stderr, answer.failure)
    stdout.write(json.dumps(answer.output) + "\n")
    stdout.flush()
    return EXIT_OK


def _note_decision(answer: PreToolUseAnswer) -> None:
    """The decision into the session's trace journal, when it keeps one (after the record:
    the trace is a copy, and never changes or delays the decision's own). The call as the
    decision read it: the hook input is not parsed again."""
    call = answer.call
    if call is None or not call.session_id:
        return
    from gateway.telemetry.fact_state import decision_json

    body = {"session_id": call.session_id, "tool_use_id": call.tool_use_id,
            "tool_name": call.tool_name, "tool_input": dict(call.tool_input),
            "agent_id": call.agent_id, "transcript_path": call.transcript_path}
    _note("PreToolUse", body, extra={"decision": decision_json(answer.decision)})


def _note_compaction(body: dict[str, object], start_ns: int, archive_id: str, error: str
                     ) -> None:
    _note("PreCompact", body, at_ns=start_ns, extra={"archive_id": archive_id, "error": error})


def _note(event: str, body: dict[str, Any], *, extra: dict[str, Any],
          at_ns: int | None = None) -> None:
    """Into the journal, after the answer is made: a journal that cannot be written is
    logged, never a changed answer."""
    from gateway.env import gateway_home
    from gateway.handlers.trace_journal import note

    try:
        note(gateway_home(), event, body, extra=extra, at_ns=at_ns)
    except OSError as exc:
        import logging

        logging.getLogger("gateway.telemetry").warning("%s not traced: %s", event, exc)


TRACE_BUILT_AT = ("Stop", "StopFailure", "SessionEnd")
TraceBuilder = Callable[[Path, dict[str, Any], "Path | None"], object]
"""Builds a session's trace from its journal (server/local_trace.py build): (gateway home,
hook input, Claude projects root)."""


def run_observed(event: str, policy_paths: Sequence[str], stdin: IO[bytes], stderr: IO[str],
                 *, build_trace: TraceBuilder | None = None,
                 projects_root: Path | None = None) -> int:
    """An observed event: noted in the session's journal; at a turn's end, Claude Code's
    refusals recorded and the trace built. Exit 0, or 1 with one line saying what failed."""
    try:
        body = json.loads(stdin.read())
    except (ValueError, RecursionError, OSError) as exc:
        return _not_recorded(stderr, f"{event} input is not JSON: {one_line(exc)}")
    if not isinstance(body, dict):
        return _not_recorded(stderr, f"{event} input is not a JSON object")
    from gateway.env import gateway_home
    from gateway.handlers.trace_journal import note

    home = gateway_home()
    failures = []
    try:
        note(home, event, body)
    except OSError as exc:
        failures.append(f"not traced: {one_line(exc)}")
    if event in ("Stop", "StopFailure"):
        failure = _record_refusals(body, policy_paths, home, projects_root)
        if failure:
            failures.append(failure)
    if build_trace is not None and event in TRACE_BUILT_AT:
        try:
            build_trace(home, body, projects_root)
        except Exception as exc:  # tracing never fails the turn
            failures.append(f"trace not built: {one_line(exc, typed=True)}")
    if failures:
        return _not_recorded(stderr, f"{event}: {'; '.join(failures)}")
    return EXIT_OK


def _record_refusals(body: dict[str, object], policy_paths: Sequence[str], home: Path,
                     projects_root: Path | None) -> str:
    """Claude Code's refusals of the turn into the audit log; what failed, or ""."""
    from gateway.env import hook_log_export_requested
    from gateway.handlers.trace_journal import journal_dir, session_key
    from gateway.handlers.turn_end import RecordedRefusals, append_refusal, record_turn_refusals
    from gateway.types import ToolCall

    failures = []
    try:
        policy = cached_policy(policy_paths) if policy_paths else None
    except Exception as exc:  # recorded all the same, with the built-in redaction
        policy = None
        failures.append(f"the policy does not load ({one_line(exc)}); refusals recorded "
                        "without it")
    try:
        trail = hook_export() if hook_log_export_requested() else None
    except Exception as exc:  # the records are written; their copy is what fails
        trail = None
        failures.append(f"refusals not exported: {one_line(exc)}")

    class _Recorder:
        def record_refusal(self, call: ToolCall, reason: str, tenant: str = "") -> object:
            record = append_refusal(call, reason, policy, tenant=tenant)
            if trail is not None:
                trail.decision(record)
            return record

    session = body.get("session_id")
    seen = RecordedRefusals(path=journal_dir(home) / f"{session_key(session)}.refused"
                            ) if isinstance(session, str) else RecordedRefusals()
    record_turn_refusals(_Recorder(), body, seen, projects_root=projects_root)
    if trail is not None:
        trail.shutdown()
    return "; ".join(failures)


def _not_recorded(stderr: IO[str], line: str) -> int:
    stderr.write("agent-gateway: " + " ".join(line.split()) + "\n")
    stderr.flush()
    return EXIT_NOT_RECORDED


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
