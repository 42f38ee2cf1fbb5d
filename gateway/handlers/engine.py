"""The hook handlers of long-running processes: the SDK callbacks of `agent-gateway run` and
the HTTP hooks of `serve` (its decision workers). An `Engine` holds what those keep between
calls: the policy (hot-reloaded), the audit log and the off-host copy. Its answers come from
the functions every vantage point shares: `answer_pre_tool_use` (handlers/decision.py) and
`answer_pre_compact` (handlers/compact.py). The command hook calls them directly.

Never raises on bad input: whatever cannot be decided is denied, with the reason.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from gateway.compaction import CompactionSettings
from gateway.handlers.compact import PreCompactAnswer, answer_pre_compact
from gateway.handlers.decision import (
    PreToolUseAnswer,
    TrailSink,
    answer_pre_tool_use,
    deny_unanswered,
)
from gateway.hookio.parse import RawInput
from gateway.policy.reload import PolicyFiles, PolicyHolder
from gateway.types import ToolCall

if TYPE_CHECKING:
    from gateway.audit.record import AuditRecord
    from gateway.policy import Policy


class Engine:
    """Policy decisions (hot-reloaded), the audit log and the pre-compaction archive."""

    def __init__(
        self,
        policy_paths: Sequence[str],
        *,
        audit_log: Path | None = None,
        reload_interval_s: float = 0.5,
        audit_export: TrailSink | None = None,
        files: PolicyFiles | None = None,
    ) -> None:
        """`files`: the texts in force this process shares between engines (policy/reload.py);
        by default the engine's own."""
        # The first load must succeed: the gateway never runs on an empty or partial policy.
        self._holder = (
            PolicyHolder(policy_paths, files=files, interval_s=reload_interval_s)
            if policy_paths else None
        )
        self._audit_log = audit_log
        self._export = audit_export
        self._loaded: Policy | None = None
        """The policy the last decision got (the deadline's deny redacts with it)."""

    @property
    def policy(self) -> Policy | None:
        if self._holder is None:
            return None
        self._loaded = self._holder.current()
        return self._loaded

    @property
    def reload_error(self) -> str | None:
        error = self._holder.last_error if self._holder else None
        return str(error) if error else None

    def pre_tool_use(
        self,
        raw: RawInput,
        *,
        audit_extra: Mapping[str, str] | None = None,
        sandbox: str = "",
        sandbox_unavailable: str = "",
        claim: Callable[[], bool] | None = None,
        export: bool = True,
    ) -> PreToolUseAnswer:
        """Decide, audit, render (handlers/decision.py). `audit_extra` adds fields to the audit
        record (the service: the caller's tenant); `sandbox` is the fingerprint of the OS
        sandbox the session runs under, `sandbox_unavailable` why it cannot start; `claim`
        asks the decision's deadline whether it may still record itself; `export`: send the
        record to the off-host copy here (else the caller does, `export_decision`)."""
        return answer_pre_tool_use(
            raw,
            lambda: self.policy,
            audit_log=self._audit_log,
            trail=self._export if export else None,
            audit_extra=audit_extra,
            sandbox=sandbox,
            sandbox_unavailable=sandbox_unavailable,
            claim=claim,
        )

    def deny_unanswered(self, raw: RawInput, reason: str, *, export: bool = True
                        ) -> PreToolUseAnswer:
        """The recorded deny for a decision its deadline overtook (handlers/decision.py), with
        the policy last loaded (never a reload: that may be what was slow)."""
        return deny_unanswered(raw, reason, self._loaded, audit_log=self._audit_log,
                               trail=self._export if export else None)

    def record_refusal(self, call: ToolCall, reason: str, tenant: str = "") -> AuditRecord:
        """A deny made by Claude Code's own permission rules, which no hook saw
        (runner/floor_refusals.py, handlers/turn_end.py), recorded like the gateway's own and
        sent off host; `tenant`: the caller behind `serve`."""
        from gateway.handlers.turn_end import append_refusal

        record = append_refusal(call, reason, self.policy, self._audit_log, tenant)
        self.export_decision(record)
        return record

    def export_decision(self, record: AuditRecord | None) -> None:
        """Send a record written with export=False to the off-host copy (never raises)."""
        if self._export is not None and record is not None:
            try:
                self._export.decision(record)
            except Exception:  # the record is on disk; its copy never changes the decision
                logging.getLogger("gateway.handlers").exception("audit record not exported")

    def compaction_settings(self) -> tuple[CompactionSettings, str]:
        policy = self.policy
        if policy is None:
            return CompactionSettings(), ""
        return policy.compaction_settings(), policy.bundle_hash

    def pre_compact(self, raw: RawInput) -> PreCompactAnswer:
        """Archive before compaction (handlers/compact.py); blocks when it must and cannot."""
        return answer_pre_compact(raw, self.compaction_settings, trail=self._export)
