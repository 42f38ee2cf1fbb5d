"""Combining org, team and project files: a lower file may only tighten.

Rules need no merging (each layer is evaluated on its own and the strictest outcome wins).
Settings do: limits take the lowest value, lists the intersection, and a lower file that tries
to loosen an upper setting is a `PolicyError` at the offending line, never silently resolved.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Literal, TypeVar

from gateway.compaction import CompactionSettings
from gateway.policy.compiled import Limits
from gateway.policy.credential_stores import store_rule_ids
from gateway.policy.model import PolicyFile
from gateway.policy.yamlsrc import Source

_DEFAULT_RANK = {"allow": 0, "abstain": 1, "ask": 2, "deny": 3}
_TIGHT_WHEN_TRUE = ("archive", "require_archive", "builtin_redaction")
_DEFAULT_COMPACTION = CompactionSettings().model_dump()


def check_conflicts(files: Sequence[tuple[Source, PolicyFile]]) -> None:
    """Raise PolicyError where a lower file loosens what an upper file set."""
    default_rank, default_from = -1, ""
    unparseable_deny_from = ""
    sandbox_from = ""
    for index, (source, spec) in enumerate(files):
        if "sandbox" in spec.model_fields_set:
            if spec.sandbox == "off" and sandbox_from:
                raise source.error(f"sandbox 'off' loosens 'required' set in {sandbox_from}; "
                                   "a lower file may only tighten", ("sandbox",))
            if spec.sandbox == "required":
                sandbox_from = sandbox_from or source.path
        if index and spec.lift:
            raise source.error("lift may only be set in the org (first) policy file",
                               ("lift",))
        unknown = [rule for rule in spec.lift if rule not in store_rule_ids()]
        if unknown:
            raise source.error(f"lift: {unknown[0]!r} is not a built-in credential-store rule "
                               f"(one of: {', '.join(store_rule_ids())})", ("lift",))
        if index and "self_protection" in spec.model_fields_set:
            raise source.error("self_protection may only be set in the org (first) policy "
                               "file", ("self_protection",))
        if "default" in spec.model_fields_set:
            rank = _DEFAULT_RANK[spec.default]
            if rank < default_rank:
                raise source.error(f"default {spec.default!r} is looser than the default set "
                                   f"in {default_from}; a lower file may only tighten",
                                   ("default",))
            default_rank, default_from = rank, source.path
        if "unparseable" in spec.model_fields_set:
            if spec.unparseable == "ask" and unparseable_deny_from:
                raise source.error(f"unparseable 'ask' loosens 'deny' set in "
                                   f"{unparseable_deny_from}", ("unparseable",))
            if spec.unparseable == "deny":
                unparseable_deny_from = source.path


def merge_withheld(files: Sequence[tuple[Source, PolicyFile]]) -> tuple[str, ...]:
    """Every file's withheld variables (a lower file may add, never remove)."""
    return tuple(dict.fromkeys(n for _, spec in files for n in spec.environment.withhold))


def merge_sandbox(files: Sequence[tuple[Source, PolicyFile]]) -> Literal["required", "off"]:
    """`required` when any file requires the OS sandbox."""
    return "required" if any(spec.sandbox == "required" for _, spec in files) else "off"


def merge_limits(files: Sequence[tuple[Source, PolicyFile]]) -> Limits:
    max_turns: tuple[int, str] | None = None
    budget: tuple[float, str] | None = None
    models: tuple[tuple[str, ...], str] | None = None
    effort: tuple[tuple[str, ...], str] | None = None
    for source, spec in files:
        lim = spec.limits
        max_turns = _lower_only(source, "max_turns", lim.max_turns, max_turns)
        budget = _lower_only(source, "max_budget_usd", lim.max_budget_usd, budget)
        if lim.models is not None:
            extra = [m for m in lim.models if models is not None and m not in models[0]]
            if extra and models is not None:
                raise source.error(f"models {extra} are not allowed by {models[1]}",
                                   ("limits", "models"))
            models = (lim.models, source.path)
        levels = lim.effort_levels()
        if levels is not None:
            extra = [e for e in levels if effort is not None and e not in effort[0]]
            if extra and effort is not None:
                raise source.error(f"effort {extra} is not allowed by {effort[1]}",
                                   ("limits", "effort"))
            effort = (levels, source.path)
    return Limits(
        max_turns[0] if max_turns else None,
        budget[0] if budget else None,
        models[0] if models else None,
        effort[0] if effort else None,
    )


def merge_compaction(files: Sequence[tuple[Source, PolicyFile]]) -> dict[str, Any] | None:
    merged: dict[str, Any] = {}
    origin: dict[str, str] = {}
    redact: dict[str, dict[str, Any]] = {}
    seen = False
    for index, (source, spec) in enumerate(files):
        section = spec.compaction
        if section is None:
            continue
        seen = True
        for key in sorted(section.model_fields_set):
            value = getattr(section, key)
            loc = ("compaction", key)
            # A safeguard on by default is on for the files above unless the org turned it off:
            # a lower file cannot be the one that does.
            if (index and key in _TIGHT_WHEN_TRUE and key not in merged and value is False
                    and _DEFAULT_COMPACTION[key] is True):
                raise source.error(f"compaction {key} cannot be turned off: it is on by default "
                                   "and only the org (first) file may turn it off", loc)
            if key == "redact":
                for rule in section.redact:
                    prior = redact.get(rule.id)
                    if prior is not None and prior != rule.model_dump():
                        raise source.error(f"redaction rule {rule.id!r} differs from the one "
                                           f"in {origin['redact:' + rule.id]}", loc)
                    redact[rule.id] = rule.model_dump()
                    origin["redact:" + rule.id] = source.path
                continue
            if key in merged and merged[key] != value:
                if key in _TIGHT_WHEN_TRUE and value is True:
                    pass  # turning a safeguard on is tightening
                elif key in _TIGHT_WHEN_TRUE:
                    raise source.error(f"compaction {key} cannot be turned off: {origin[key]} "
                                       "turns it on", loc)
                elif key == "settle_timeout_s":
                    value = min(value, merged[key])
                else:
                    raise source.error(f"compaction {key} {value!r} conflicts with "
                                       f"{merged[key]!r} set in {origin[key]}", loc)
            merged[key], origin[key] = value, source.path
    if not seen:
        return None
    if redact:
        merged["redact"] = list(redact.values())
    return merged


_Number = TypeVar("_Number", int, float)


def _lower_only(
    source: Source, key: str, value: _Number | None, upper: tuple[_Number, str] | None
) -> tuple[_Number, str] | None:
    """A numeric limit a lower layer may lower but never raise; with the file that set it."""
    if value is None:
        return upper
    if upper is not None and value > upper[0]:
        raise source.error(
            f"{key} {value} raises the limit {upper[0]} set in {upper[1]}", ("limits", key)
        )
    return (value, source.path)
