"""Pure: one decision as an audit record an auditor can read.

The tool input decided (Bash command, file path, URL, MCP arguments) is kept with secrets
redacted by the built-in rules and the policy's `compaction.redact` patterns, each string cut
at STRING_CAP characters and the whole at INPUT_CAP bytes; `input_sha256` and `input_bytes`
describe the input as it was decided (canonical JSON), so a copy held elsewhere can be matched.
"""

from __future__ import annotations

import functools
import hashlib
import json
import re
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any, Literal, NamedTuple, NotRequired, TypedDict

from gateway.archive.redact import BUILTIN_RULES, Pattern, Redactor, patterns_from, redact_json
from gateway.hashchain import canonical_json
from gateway.types import JSON, Decision, DecisionKind, EnforcedBy, ToolCall


class DecisionRecord(TypedDict):
    """One PreToolUse decision, before it is chained."""

    time: str
    session_id: str
    prompt_id: str
    tool_use_id: str
    agent_id: str
    tool: str
    decision: DecisionKind
    would_deny: bool
    rule_id: str
    reason: str
    policy: str
    """The policy bundle's sha256."""
    enforced_by: EnforcedBy
    """`hook`: the decision is the hook's answer; `sandbox`: a file rule the hook could not
    prove is left to the session's OS sandbox, which holds it (`rule_id` names it)."""
    self_protection: NotRequired[Literal["off"]]
    tenant: NotRequired[str]
    input_sha256: str
    """Of the input as decided (canonical JSON), before redaction."""
    input_bytes: int
    input: JSON
    """The input as kept: redacted, each string and the whole capped."""
    input_redactions: NotRequired[list[str]]
    input_truncated: NotRequired[bool]


class EventRecord(TypedDict):
    """A hook request the policy does not decide (gateway.server.audit_events), before it is
    chained: an observed event, the archive step, a refusal."""

    time: str
    event: str
    session_id: str
    tenant: str
    decision: str
    reason: str
    tool_use_id: NotRequired[str]
    tool: NotRequired[str]
    agent_id: NotRequired[str]
    rule_id: NotRequired[str]
    archive_id: NotRequired[str]
    cwd: NotRequired[str]


class AuditRecord(TypedDict, total=False):
    """A record as the log holds it: a decision or an event record, numbered, chained and
    (with a key) MACed. Read back from disk it is only this shape once verified."""

    time: str
    event: str
    session_id: str
    prompt_id: str
    tool_use_id: str
    agent_id: str
    tool: str
    tenant: str
    decision: str
    would_deny: bool
    rule_id: str
    reason: str
    policy: str
    enforced_by: str
    self_protection: Literal["off"]
    archive_id: str
    cwd: str
    input_sha256: str
    input_bytes: int
    input: JSON
    input_redactions: list[str]
    input_truncated: bool
    chain: str
    seq: int
    prev_hash: str
    hash: str
    key_id: str
    mac: str


STRING_CAP = 2048
"""Characters kept of each string in a tool input."""
INPUT_CAP = 16384
"""Bytes kept of the whole input (as JSON); beyond it the record keeps a cut JSON text."""


def _after(*prefixes: str) -> str:
    """A lookbehind for each prefix (each of fixed width, as Python's `re` needs)."""
    return "(?:" + "|".join(f"(?<={re.escape(p)})" for p in prefixes) + ")"


_VALUE = r"""(?!\[REDACTED)[^\s'"\\;&|`)]{4,}"""  # not what an earlier rule left
AUDIT_RULES: tuple[Pattern, ...] = (
    # `export TOKEN=...`, `DB_PASSWORD=... ./run`, `--token=...`: the value, not the name
    Pattern("builtin.secret-assignment", _after(
        "TOKEN=", "SECRET=", "PASSWORD=", "PASSWD=", "API_KEY=", "APIKEY=", "ACCESS_KEY=",
        "PRIVATE_KEY=", "CREDENTIALS=", "token=", "secret=", "password=", "passwd=",
        "api_key=", "apikey=", "--token ", "--password ", "--api-key ") + _VALUE),
    # `curl -H "Authorization: Basic ..."`, any scheme
    Pattern("builtin.authorization-header", _after(
        "Authorization: ", "authorization: ", "AUTHORIZATION: ")
        + r"""(?!\[REDACTED)[^'"\\\n]{8,}"""),
    # https://user:password@host
    Pattern("builtin.url-credentials",
            r"""(?<=://)[^/\s:@'"\\]+:[^/\s@'"\\]{3,}(?=@)"""),
)
"""Audit records only (a tool input is short; these would slow a 100 MB archive down)."""


@functools.lru_cache(maxsize=64)
def audit_redactor(patterns: tuple[Pattern, ...] = ()) -> Redactor:
    """Built-in rules always (audit records travel to log pipelines), then the policy's."""
    return Redactor((*BUILTIN_RULES, *AUDIT_RULES, *patterns))


def policy_redactor(compaction: Mapping[str, Any] | None) -> Redactor:
    """The redactor for a policy's merged `compaction:` section (plain data, as a compiled
    policy holds it): built-in rules and its `redact:` patterns."""
    return audit_redactor(patterns_from(compaction))


def decision_record(
    call: ToolCall,
    decision: Decision,
    *,
    now: datetime | None = None,
    redactor: Redactor | None = None,
) -> DecisionRecord:
    raw = decided_bytes(call.tool_input)
    shown, redactions, cut = _input_as_kept(call.tool_input, raw, redactor or audit_redactor())
    record: DecisionRecord = {
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
        "enforced_by": decision.enforced_by,
        "input_sha256": hashlib.sha256(raw).hexdigest(),
        "input_bytes": len(raw),
        "input": shown,
    }
    if not decision.self_protection:
        record["self_protection"] = "off"  # the org policy turned the built-in rules off
    if redactions is not None:
        record["input_redactions"] = redactions
    if cut:
        record["input_truncated"] = True
    return record


def decided_bytes(tool_input: Mapping[str, JSON]) -> bytes:
    """The input as decided, as canonical JSON bytes. A string Claude Code sends may hold a
    lone surrogate (JSON allows the escape, UTF-8 has no encoding for it): its bytes are the
    ones Python's `surrogatepass` gives, so the digest still describes what was decided."""
    try:
        return canonical_json(tool_input)
    except UnicodeEncodeError:
        text = json.dumps(tool_input, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
        return text.encode("utf-8", "surrogatepass")


_SURROGATE = re.compile("[\ud800-\udfff]")


def encodable(value: JSON) -> JSON:
    """`value` with each lone surrogate replaced by U+FFFD: what a record keeps of a string
    UTF-8 cannot hold (its digest, `input_sha256`, is of the string as it came)."""
    if isinstance(value, str):
        return _SURROGATE.sub("\ufffd", value)
    if isinstance(value, Mapping):
        return {_SURROGATE.sub("\ufffd", str(k)): encodable(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [encodable(v) for v in value]
    return value


class _Kept(NamedTuple):
    shown: JSON
    """The input redacted and capped."""
    redactions: list[str] | None
    """The ids of the rules that redacted it, if any did."""
    cut: bool


def _input_as_kept(tool_input: Mapping[str, JSON], raw: bytes, redactor: Redactor) -> _Kept:
    shown: JSON = dict(tool_input)
    redactions: list[str] | None = None
    if redactor.matches_any(raw):
        shown, hits = redact_json(shown, redactor)
        redactions = sorted(hits)
    # No string can be longer than the whole input: most inputs need no walk at all.
    shown, cut = _cap_strings(shown) if len(raw) > STRING_CAP else (shown, False)
    text = canonical_json(shown) if redactions is not None or cut else raw
    if len(text) > INPUT_CAP:
        shown, cut = text[:INPUT_CAP].decode(errors="ignore") + "…", True
    return _Kept(shown, redactions, cut)


def _cap_strings(value: JSON) -> tuple[JSON, bool]:
    cut = False

    def walk(item: JSON) -> JSON:
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
