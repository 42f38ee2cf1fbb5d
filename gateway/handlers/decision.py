"""The one decision path: `answer_pre_tool_use` parses a PreToolUse hook input, decides it,
records the decision in the audit log and renders Claude Code's answer. Every vantage point
calls it: the command hook (`agent-gateway hook pre-tool-use`, handlers/command.py), the
loopback http hook of `agent-gateway run` and the SDK callback of `gateway.query`
(runner/hook_endpoint.py and runner/callbacks.py, both through runner/hook_answers.py and
handlers/engine.py) and the HTTP hook of `serve` (server/decision_worker.py, through
handlers/engine.py).

Fails closed: whatever goes wrong before the answer is rendered (unreadable input, a policy
that does not load, an evaluation bug, an audit log that cannot be written, a render bug)
yields a deny naming what went wrong, never an exception and never an allow. What happens
after the decision is recorded (its off-host copy) never changes it.

Import-light: the command hook starts one process per tool call, so this module loads the
compiled-policy evaluation, the audit log and the standard library, nothing else.
"""

from __future__ import annotations

import dataclasses
import hmac
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from gateway.audit.log import append_decision
from gateway.audit.record import policy_redactor
from gateway.env import environment
from gateway.errors import HookInputError, one_line
from gateway.hookio.parse import RawInput, parse_pre_tool_use
from gateway.hookio.render import render_deny, render_pre_tool_use
from gateway.hookio.wire import PreToolUseOutput
from gateway.policy.evaluate import decide
from gateway.types import FAIL_CLOSED_RULE, Decision, ToolCall

if TYPE_CHECKING:
    from gateway.archive.manifest import Manifest
    from gateway.audit.record import AuditRecord
    from gateway.policy.compiled import Policy



def _log_exception(message: str) -> None:
    """Log the exception being handled; logging loads only then (hook processes start cold)."""
    import logging

    logging.getLogger("gateway.handlers.decision").exception(message)


PolicySource = Callable[[], "Policy | None"]
"""The policy in force now (a cache read, a hot-reloading holder); None when there is none,
and then nothing is decided or recorded."""


class TrailSink(Protocol):
    """Where records go as they are written (the off-host copy: handlers.trail.AuditExport)."""

    def decision(self, record: AuditRecord) -> None: ...

    def archive(self, manifest: Manifest, store: str) -> None: ...


@dataclass(frozen=True, slots=True)
class PreToolUseAnswer:
    decision: Decision
    """What Claude Code is told: the policy's decision, or a fail-closed deny."""
    output: PreToolUseOutput
    """The hook output JSON, the same from every vantage point."""
    call: ToolCall | None = None
    """The tool call, when the input could be read."""
    record: AuditRecord | None = None
    """The audit record as written (sequence number, hash, MAC)."""
    failure: str = ""
    """Why no decision could be made ('' when one was); `decision` is then the fail-closed
    deny. The command hook exits 2 with this line instead of printing the deny."""


def fail_closed(reason: str, policy_hash: str = "") -> Decision:
    """A deny the gateway gives because it cannot decide."""
    return Decision(kind="deny", rule_id=FAIL_CLOSED_RULE, reason=" ".join(reason.split()),
                    policy_hash=policy_hash)


def answer_pre_tool_use(
    raw: RawInput,
    policy: PolicySource,
    *,
    audit_log: Path | None = None,
    trail: TrailSink | None = None,
    audit_extra: Mapping[str, str] | None = None,
    sandbox: str = "",
    sandbox_unavailable: str = "",
    claim: Callable[[], bool] | None = None,
) -> PreToolUseAnswer:
    """Parse, decide, record, render; never raises. `audit_log` defaults to the home's;
    `audit_extra` adds fields to the record (the service: the caller's tenant); `sandbox` is
    the fingerprint of the OS sandbox the session's settings carry ('' for none), told by
    where the hook is configured (a hook argument, the hook URL), never by the agent;
    `sandbox_unavailable` why the sandbox the policy requires cannot start (`run` knows).
    `claim` (a deadline's Ticket.record) is asked just before the decision is recorded:
    False means its deadline has passed and its deny answers, so nothing is recorded here."""
    try:
        call = dataclasses.replace(parse_pre_tool_use(raw), environ=environment())
    except Exception as exc:
        typed = not isinstance(exc, HookInputError)
        return _failed(f"could not read the hook input: {one_line(exc, typed=typed)}")
    try:
        current = policy()
    except Exception as exc:
        return _failed(f"cannot load its policy: {one_line(exc, typed=True)}", call)
    if current is None:
        return _answer(Decision(kind="abstain"), call)
    failure = ""
    try:
        decision = decide(current, call, sandboxed=sandboxed(current, sandbox),
                          sandbox_unavailable=sandbox_unavailable)
    except Exception as exc:  # an evaluation bug must block, never allow; it is recorded
        _log_exception("policy evaluation failed")
        decision = fail_closed(
            f"agent-gateway could not decide: {one_line(exc, typed=True)}", current.bundle_hash
        )
        failure = decision.reason
    if claim is not None and not claim():
        return _failed("gave no answer before its deadline", call, current.bundle_hash)
    try:
        record = append_decision(
            call, decision, audit_log, redactor=policy_redactor(current.compaction),
            extra=audit_extra,
        )
    except Exception as exc:
        # An unrecorded decision is not one this gateway makes.
        return _failed(f"could not write its audit log: {one_line(exc, typed=True)}", call,
                       current.bundle_hash)
    if trail is not None:
        try:
            trail.decision(record)
        except Exception:  # the record is on disk; its copy never changes the decision
            _log_exception("audit record not exported; the decision stands")
    return _answer(decision, call, record, failure)


def deny_unanswered(
    raw: RawInput,
    reason: str,
    policy: Policy | None,
    *,
    audit_log: Path | None = None,
    trail: TrailSink | None = None,
    audit_extra: Mapping[str, str] | None = None,
) -> PreToolUseAnswer:
    """The deny given when a decision did not finish before its deadline: recorded (with
    `policy`'s redaction, the built-in one when it had not loaded), then rendered; never
    raises. Its `failure` is `reason` (the command hook exits 2 with it)."""
    try:
        call = dataclasses.replace(parse_pre_tool_use(raw), environ=environment())
    except Exception as exc:
        typed = not isinstance(exc, HookInputError)
        return _failed(f"could not read the hook input: {one_line(exc, typed=typed)}")
    policy_hash = policy.bundle_hash if policy is not None else ""
    decision = fail_closed(reason, policy_hash)
    try:
        record = append_decision(
            call, decision, audit_log,
            redactor=policy_redactor(policy.compaction) if policy is not None else None,
            extra=audit_extra,
        )
    except Exception as exc:
        return _failed(f"could not write its audit log: {one_line(exc, typed=True)}", call,
                       policy_hash)
    if trail is not None:
        try:
            trail.decision(record)
        except Exception:  # the record is on disk; its copy never changes the decision
            _log_exception("audit record not exported; the decision stands")
    return _answer(decision, call, record, decision.reason)


def sandboxed(policy: Policy, fingerprint: str) -> bool:
    """Whether a session whose settings carry `fingerprint` runs under the sandbox compiled
    from `policy`: not when the policy has changed since its settings were generated (the
    sandbox holds the old rules), nor when the policy does not require one."""
    return (bool(fingerprint) and policy.sandbox == "required"
            and hmac.compare_digest(fingerprint, policy.sandbox_fingerprint))


def _failed(what: str, call: ToolCall | None = None, policy_hash: str = "") -> PreToolUseAnswer:
    decision = fail_closed(f"agent-gateway {what}", policy_hash)
    return _answer(decision, call, failure=decision.reason)


def _answer(
    decision: Decision,
    call: ToolCall | None,
    record: AuditRecord | None = None,
    failure: str = "",
) -> PreToolUseAnswer:
    try:
        output = render_pre_tool_use(decision)
    except Exception as exc:
        _log_exception("hook output not rendered")
        decision = fail_closed(f"agent-gateway could not render its answer: {one_line(exc)}")
        output = render_deny(decision.reason)
        failure = decision.reason
    return PreToolUseAnswer(decision, output, call, record, failure)
