"""One decision path for every vantage point: SDK callbacks in `agent-gateway run` and the
HTTP hooks of `agent-gateway serve`. (The command hook takes the same decide-and-audit path
through gateway.hooks.command, minus the reloader, to stay fast to start.)

Never raises on bad input: whatever cannot be decided is denied, with the reason.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from gateway.archive.config import CompactionSettings
from gateway.audit.log import append_decision
from gateway.audit.record import policy_redactor
from gateway.errors import GatewayError, HookInputError
from gateway.hookio.parse import tool_call_from_input
from gateway.hookio.render import render_pre_tool_use
from gateway.hooks.compact import (
    CompactOutcome,
    archive_before_compact,
    parse_compact_request,
    render_pre_compact,
)
from gateway.policy import Policy, decide
from gateway.policy.reload import PolicyHolder
from gateway.types import Decision, ToolCall

if TYPE_CHECKING:
    pass

log = logging.getLogger("gateway.hooks.engine")


def deny(reason: str, policy_hash: str = "") -> Decision:
    return Decision(
        kind="deny", rule_id="gateway.fail-closed", reason=reason, policy_hash=policy_hash
    )


class TrailSink(Protocol):
    """Where records go as they are written (the off-host copy: gateway.hooks.trail.AuditExport)."""

    def decision(self, record: Mapping[str, Any]) -> None: ...

    def archive(self, manifest: Mapping[str, Any], store: str) -> None: ...


class Engine:
    """Policy decisions (hot-reloaded), the audit log and the pre-compaction archive."""

    def __init__(
        self,
        policy_paths: Sequence[str],
        *,
        audit_log: Path | None = None,
        reload_interval_s: float = 0.5,
        audit_export: TrailSink | None = None,
    ) -> None:
        # The first load must succeed: the gateway never runs on an empty or partial policy.
        self._holder = (
            PolicyHolder(policy_paths, interval_s=reload_interval_s) if policy_paths else None
        )
        self._audit_log = audit_log
        self._export = audit_export

    @property
    def policy(self) -> Policy | None:
        return self._holder.current() if self._holder else None

    @property
    def reload_error(self) -> str | None:
        error = self._holder.last_error if self._holder else None
        return str(error) if error else None

    def pre_tool_use(
        self, raw: Mapping[str, Any], *, audit_extra: Mapping[str, Any] | None = None
    ) -> tuple[ToolCall | None, Decision, dict[str, Any]]:
        """Decide, audit, render. A failure anywhere yields a deny with its reason.

        `audit_extra` adds fields to the audit record (the service: the caller's tenant)."""
        try:
            call = tool_call_from_input(dict(raw))
        except (HookInputError, TypeError, ValueError) as exc:
            decision = deny(f"agent-gateway could not read the hook input: {_line(exc)}")
            return None, decision, dict(render_pre_tool_use(decision))
        policy = None
        try:
            policy = self.policy
            decision = decide(policy, call) if policy else Decision(kind="abstain")
        except Exception as exc:  # an engine bug must block, never allow
            log.exception("policy evaluation failed")
            decision = deny(f"agent-gateway could not decide: {_line(exc)}")
        if policy is not None:
            try:
                record = append_decision(
                    call, decision, self._audit_log, redactor=policy_redactor(policy),
                    extra=audit_extra,
                )
            except (OSError, GatewayError) as exc:
                # An unrecorded decision is not one this gateway makes.
                decision = deny(
                    f"agent-gateway could not write its audit log: {_line(exc)}", policy.bundle_hash
                )
            else:
                if self._export is not None:
                    self._export.decision(record)
        return call, decision, dict(render_pre_tool_use(decision))

    def compaction_settings(self) -> tuple[CompactionSettings, str]:
        policy = self.policy
        if policy is None:
            return CompactionSettings(), ""
        settings: CompactionSettings = policy.compaction_settings()
        return settings, policy.bundle_hash

    def pre_compact(self, raw: Mapping[str, Any]) -> tuple[CompactOutcome, dict[str, Any]]:
        settings, policy_hash = self.compaction_settings()
        try:
            request = parse_compact_request(raw)
        except GatewayError as exc:
            error = f"bad PreCompact hook input: {_line(exc)}"
            log.error(error)
            outcome = CompactOutcome(
                error=error,
                block_reason=f"agent-gateway: {error}" if settings.require_archive else "",
            )
            return outcome, render_pre_compact(outcome)
        outcome = archive_before_compact(request, settings, policy_hash)
        if self._export is not None and outcome.manifest is not None:
            self._export.archive(outcome.manifest, outcome.store)
        return outcome, render_pre_compact(outcome)


def _line(exc: BaseException) -> str:
    return " ".join(str(exc).split()) or type(exc).__name__
