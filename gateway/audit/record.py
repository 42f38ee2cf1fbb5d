"""Pure: one decision as an audit record an auditor can read.

The tool input decided (Bash command, file path, URL, MCP arguments) is kept with secrets
redacted by the built-in rules and the policy's `compaction.redact` patterns, each string cut
at STRING_CAP characters and the whole at INPUT_CAP bytes; `input_sha256` and `input_bytes`
describe the input as it was decided (canonical JSON), so a copy held elsewhere can be matched.
"""

from __future__ import annotations

import functools
import hashlib
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

from gateway.archive.redact import BUILTIN_RULES, Pattern, Redactor, patterns_from, redact_json
from gateway.hashchain import canonical_json
from gateway.types import Decision, ToolCall

STRING_CAP = 2048
"""Characters kept of each string in a tool input."""
INPUT_CAP = 16384
"""Bytes kept of the whole input (as JSON); beyond it the record keeps a cut JSON text."""


@functools.lru_cache(maxsize=64)
def audit_redactor(patterns: tuple[Pattern, ...] = ()) -> Redactor:
    """Built-in rules always (audit records travel to log pipelines), then the policy's."""
    return Redactor((*BUILTIN_RULES, *patterns))


def policy_redactor(policy: Any) -> Redactor:
    """The redactor for a compiled policy: built-in rules and its `compaction.redact`."""
    return audit_redactor(patterns_from(getattr(policy, "compaction", None)))


def decision_record(
    call: ToolCall,
    decision: Decision,
    *,
    now: datetime | None = None,
    redactor: Redactor | None = None,
) -> dict[str, Any]:
    record: dict[str, Any] = {
        "time": (now or datetime.now(UTC)).isoformat(timespec="microseconds"),
        "session_id": call.session_id,
        "prompt_id": call.prompt_id,
        "tool_use_id": call.tool_use_id,
        "agent_id": call.agent_id,
        "tool": call.tool_name,
        "decision": decision.kind,
        "would_deny": decision.would_deny,
        "rule_id": decision.rule_id,
        "reason": decision.reason,
        "policy": decision.policy_hash,
    }
    if not decision.self_protection:
        record["self_protection"] = "off"  # the org policy turned the built-in rules off
    record.update(input_fields(call.tool_input, redactor or audit_redactor()))
    return record


def input_fields(tool_input: Mapping[str, Any], redactor: Redactor) -> dict[str, Any]:
    raw = canonical_json(tool_input)
    fields: dict[str, Any] = {
        "input_sha256": hashlib.sha256(raw).hexdigest(),
        "input_bytes": len(raw),
    }
    shown: Any = tool_input
    changed = False
    if redactor.matches_any(raw):
        shown, hits = redact_json(tool_input, redactor)
        fields["input_redactions"] = sorted(hits)
        changed = True
    # No string can be longer than the whole input: most inputs need no walk at all.
    shown, cut = _cap_strings(shown) if len(raw) > STRING_CAP else (shown, False)
    text = canonical_json(shown) if changed or cut else raw
    if len(text) > INPUT_CAP:
        shown, cut = text[:INPUT_CAP].decode(errors="ignore") + "…", True
    fields["input"] = shown
    if cut:
        fields["input_truncated"] = True
    return fields


def _cap_strings(value: Any) -> tuple[Any, bool]:
    cut = False

    def walk(item: Any) -> Any:
        nonlocal cut
        if isinstance(item, str):
            if len(item) > STRING_CAP:
                cut = True
                return item[:STRING_CAP] + "…"
            return item
        if isinstance(item, Mapping):
            return {str(k): walk(v) for k, v in item.items()}
        if isinstance(item, list | tuple):
            return [walk(v) for v in item]
        return item

    return walk(value), cut
