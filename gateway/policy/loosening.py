"""What a new version of a policy file gives up against the version in force. Pure.

A file cut short while it is written (an editor's truncate-then-write, a `cp` in progress) is
often still a valid policy: a prefix of the rules. The reloader (reload.py) holds back a change
that gives something up until the file has stayed the same for longer, and says loudly what a
loosening reload removed. Adding rules and raising protections never counts.
"""

from __future__ import annotations

import json
from collections.abc import Iterator

from gateway.compaction import CompactionSettings
from gateway.policy.model import PolicyFile, RuleSpec

_RANK = {"allow": 0, "abstain": 1, "ask": 2, "deny": 3}
_SAFEGUARDS = ("archive", "require_archive", "builtin_redaction")
_IDENTITY_FREE = frozenset({"id", "reason", "decision", "mode"})
"""What does not make a rule another rule: renaming it or rewording its reason loses nothing."""


def loosenings(old: PolicyFile, new: PolicyFile) -> list[str]:
    """What `new` enforces less than `old`, one short phrase each (empty: nothing)."""
    return list(_settings(old, new)) + list(_rules(old, new)) + list(_limits(old, new)) + list(
        _compaction(old, new)
    )


def _settings(old: PolicyFile, new: PolicyFile) -> Iterator[str]:
    if old.mode == "enforce" and new.mode == "monitor":
        yield "mode enforce -> monitor"
    if _RANK[new.default] < _RANK[old.default]:
        yield f"default {old.default} -> {new.default}"
    if old.unparseable == "deny" and new.unparseable == "ask":
        yield "unparseable deny -> ask"
    if old.sandbox == "required" and new.sandbox == "off":
        yield "sandbox required -> off"
    if old.self_protection and not new.self_protection:
        yield "self_protection true -> false"


def _rules(old: PolicyFile, new: PolicyFile) -> Iterator[str]:
    if old.mode == "enforce" and new.mode == "monitor":
        return  # said once above, rather than once per rule
    kept: dict[str, int] = {}
    for key, _, decision, enforced in _enforced(new):
        if enforced:
            kept[key] = max(kept.get(key, -1), _RANK[decision])
    for key, text, decision, enforced in _enforced(old):
        if not enforced or decision == "allow":
            continue
        rank = kept.get(key)
        if rank is None:
            yield f"{decision} rule {text} removed"
        elif rank < _RANK[decision]:
            yield f"{decision} rule {text} loosened"


def _enforced(spec: PolicyFile) -> Iterator[tuple[str, str, str, bool]]:
    """(identity, as written, decision, enforced) of every rule in the file."""
    enforce = spec.mode == "enforce"
    for decision in ("deny", "ask", "allow"):
        for _, text, rule_id in spec.permissions.entries(decision):
            yield (_identity(RuleSpec(rule=text)), repr(rule_id) if rule_id else repr(text),
                   decision, enforce)
    for rule in spec.rules:
        mode = rule.mode or spec.mode
        shown = repr(rule.id) if rule.id else _identity(rule)
        yield _identity(rule), shown, rule.decision, mode == "enforce"


def _identity(rule: RuleSpec) -> str:
    return json.dumps(rule.model_dump(exclude=set(_IDENTITY_FREE), exclude_none=True),
                      sort_keys=True)


def _limits(old: PolicyFile, new: PolicyFile) -> Iterator[str]:
    was, now = old.limits, new.limits
    for key in ("max_turns", "max_budget_usd"):
        before, after = getattr(was, key), getattr(now, key)
        if before is not None and (after is None or after > before):
            yield f"limits.{key} {before:g} -> {'none' if after is None else f'{after:g}'}"
    for key, before_list, after_list in (
        ("models", was.models, now.models),
        ("effort", was.effort_levels(), now.effort_levels()),
    ):
        if before_list is None:
            continue
        if after_list is None:
            yield f"limits.{key} no longer limited"
        elif extra := [v for v in after_list if v not in before_list]:
            yield f"limits.{key} adds {', '.join(extra)}"


def _compaction(old: PolicyFile, new: PolicyFile) -> Iterator[str]:
    was = old.compaction or CompactionSettings()
    now = new.compaction or CompactionSettings()
    for key in _SAFEGUARDS:
        if getattr(was, key) and not getattr(now, key):
            yield f"compaction.{key} true -> false"
    kept = {rule.id for rule in now.redact}
    for rule in was.redact:
        if rule.id not in kept:
            yield f"compaction.redact rule {rule.id!r} removed"
