"""The compiled policy as plain JSON data, and back, checked field by field.

Nothing here executes code from what it reads: regexes are recompiled from their text, and
any value of an unexpected type or shape makes `policy_from_data` raise ValueError (the
cache then treats the entry as absent). Pure: no file or environment access.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import Any, TypeVar, cast

from gateway.policy.bash_rules import BashPattern
from gateway.policy.compiled import (
    AnyInput,
    BashCommand,
    BashPipeline,
    BashRegex,
    DomainRule,
    FieldRegex,
    Layer,
    Limits,
    Matcher,
    PathRule,
    Policy,
    Rule,
    index_layer,
)
from gateway.policy.domains import DomainPattern
from gateway.policy.paths import PathPattern

FORMAT = "policy-cache-11"
Data = dict[str, Any]
T = TypeVar("T")


# -- to data ---------------------------------------------------------------------------
def policy_to_data(policy: Policy) -> Data:
    return {
        "format": FORMAT,
        "bundle_hash": policy.bundle_hash,
        "layers": [_layer(layer) for layer in policy.layers],
        "limits": {
            "max_turns": policy.limits.max_turns,
            "max_budget_usd": policy.limits.max_budget_usd,
            "models": list(policy.limits.models) if policy.limits.models is not None else None,
            "effort": list(policy.limits.effort) if policy.limits.effort is not None else None,
        },
        "compaction": dict(policy.compaction) if policy.compaction is not None else None,
        "self_protection": policy.self_protection,
        "sandbox": policy.sandbox,
        "sandbox_fingerprint": policy.sandbox_fingerprint,
        "withheld_env": list(policy.withheld_env),
    }


def _layer(layer: Layer) -> Data:
    return {"name": layer.name, "path": layer.path, "mode": layer.mode,
            "default": layer.default, "unparseable": layer.unparseable,
            "unparseable_monitored": layer.unparseable_monitored,
            "rules": [_rule(rule) for rule in layer.rules]}


def _rule(rule: Rule) -> Data:
    return {"id": rule.id, "decision": rule.decision, "monitor": rule.monitor,
            "reason": rule.reason, "tools": list(rule.tools),
            "tool_glob": _regex(rule.tool_glob), "matcher": _matcher(rule.matcher),
            "text": rule.text, "listed": rule.listed}


def _regex(pattern: re.Pattern[str] | None) -> Data | None:
    return None if pattern is None else {"re": pattern.pattern, "flags": int(pattern.flags)}


def _token(token: re.Pattern[str] | str) -> Any:
    return token if isinstance(token, str) else _regex(token)


def _bash(pattern: BashPattern) -> Data:
    return {"name": pattern.name, "name_glob": _regex(pattern.name_glob),
            "flags": [[flag, [_token(t) for t in tokens]] for flag, tokens in pattern.flags],
            "operands": [_token(t) for t in pattern.operands], "prefix": pattern.prefix,
            "source": pattern.source}


def _matcher(matcher: Matcher) -> Data:
    if isinstance(matcher, AnyInput):
        return {"kind": "any"}
    if isinstance(matcher, BashCommand):
        return {"kind": "bash", "pattern": _bash(matcher.pattern)}
    if isinstance(matcher, BashRegex):
        return {"kind": "bash_regex", "regex": _regex(matcher.regex)}
    if isinstance(matcher, BashPipeline):
        return {"kind": "pipeline",
                "stages": [[_bash(p) for p in stage] for stage in matcher.stages]}
    if isinstance(matcher, PathRule):
        p = matcher.pattern
        return {"kind": "path", "anchor": p.anchor, "regex": _regex(p.regex),
                "floating": p.floating, "source": p.source, "prefix": p.prefix}
    if isinstance(matcher, DomainRule):
        d = matcher.pattern
        return {"kind": "domain", "host": d.host, "subdomains": d.subdomains,
                "source": d.source}
    return {"kind": "field", "field": matcher.field, "regex": _regex(matcher.regex),
            "full": matcher.full}


# -- from data -------------------------------------------------------------------------
def policy_from_data(data: Any) -> Policy:
    """The Policy `data` describes; ValueError when anything is missing or malformed."""
    root = _dict(data)
    if root.get("format") != FORMAT:
        raise ValueError("not a policy cache entry of this format")
    limits = _dict(root.get("limits"))
    compaction = root.get("compaction")
    return Policy(
        tuple(_load_layer(x) for x in _list(root.get("layers"))),
        _str(root.get("bundle_hash")),
        Limits(_opt(limits.get("max_turns"), _int), _opt(limits.get("max_budget_usd"), _num),
               _opt(limits.get("models"), _strs), _opt(limits.get("effort"), _strs)),
        _dict(compaction) if compaction is not None else None,
        self_protection=_bool(root.get("self_protection")),
        sandbox=cast(Any, _choice(root.get("sandbox"), ("required", "off"))),
        sandbox_fingerprint=_str(root.get("sandbox_fingerprint")),
        withheld_env=_strs(root.get("withheld_env")),
    )


def _load_layer(raw: Any) -> Layer:
    data = _dict(raw)
    mode = _choice(data.get("mode"), ("enforce", "monitor"))
    default = _choice(data.get("default"), ("deny", "ask", "allow", "abstain"))
    unparseable = _choice(data.get("unparseable"), ("deny", "ask"))
    rules = [_load_rule(r) for r in _list(data.get("rules"))]
    layer = index_layer(_str(data.get("name")), _str(data.get("path")), cast(Any, mode),
                        cast(Any, default), cast(Any, unparseable), rules)
    if _bool(data.get("unparseable_monitored")):
        layer = replace(layer, unparseable_monitored=True)
    return layer


def _load_rule(raw: Any) -> Rule:
    data = _dict(raw)
    return Rule(_str(data.get("id")),
                cast(Any, _choice(data.get("decision"), ("deny", "ask", "allow"))),
                _bool(data.get("monitor")), _str(data.get("reason")), _strs(data.get("tools")),
                _opt(data.get("tool_glob"), _load_regex), _load_matcher(data.get("matcher")),
                _str(data.get("text")), listed=_bool(data.get("listed")))


def _load_regex(raw: Any) -> re.Pattern[str]:
    data = _dict(raw)
    try:
        return re.compile(_str(data.get("re")), _int(data.get("flags")))
    except re.error as exc:
        raise ValueError(f"bad regex: {exc}") from None


def _load_token(raw: Any) -> re.Pattern[str] | str:
    return raw if isinstance(raw, str) else _load_regex(raw)


def _load_bash(raw: Any) -> BashPattern:
    data = _dict(raw)
    flags = tuple((_str(_list(f)[0]), tuple(_load_token(t) for t in _list(_list(f)[1])))
                  for f in _list(data.get("flags")))
    return BashPattern(_str(data.get("name")), _opt(data.get("name_glob"), _load_regex),
                       flags, tuple(_load_token(t) for t in _list(data.get("operands"))),
                       _bool(data.get("prefix")), _str(data.get("source")))


_MATCHERS: dict[str, Callable[[Data], Matcher]] = {
    "any": lambda d: AnyInput(),
    "bash": lambda d: BashCommand(_load_bash(d.get("pattern"))),
    "bash_regex": lambda d: BashRegex(_load_regex(d.get("regex"))),
    "pipeline": lambda d: BashPipeline(tuple(tuple(_load_bash(p) for p in _list(stage))
                                             for stage in _list(d.get("stages")))),
    "path": lambda d: PathRule(PathPattern(
        cast(Any, _choice(d.get("anchor"), ("abs", "home", "root", "cwd"))),
        _load_regex(d.get("regex")), _bool(d.get("floating")), _str(d.get("source")),
        _str(d.get("prefix")))),
    "domain": lambda d: DomainRule(DomainPattern(_str(d.get("host")),
                                                 _bool(d.get("subdomains")),
                                                 _str(d.get("source")))),
    "field": lambda d: FieldRegex(_str(d.get("field")), _load_regex(d.get("regex")),
                                  _bool(d.get("full"))),
}


def _load_matcher(raw: Any) -> Matcher:
    data = _dict(raw)
    build = _MATCHERS.get(_str(data.get("kind")))
    if build is None:
        raise ValueError(f"unknown matcher kind {data.get('kind')!r}")
    return build(data)


# -- checked conversions ----------------------------------------------------------------
def _dict(value: Any) -> Data:
    if not isinstance(value, dict) or not all(isinstance(k, str) for k in value):
        raise ValueError("expected an object")
    return value


def _list(value: Any) -> list[Any]:
    if not isinstance(value, list):
        raise ValueError("expected a list")
    return value


def _str(value: Any) -> str:
    if not isinstance(value, str):
        raise ValueError("expected a string")
    return value


def _strs(value: Any) -> tuple[str, ...]:
    return tuple(_str(v) for v in _list(value))


def _bool(value: Any) -> bool:
    if not isinstance(value, bool):
        raise ValueError("expected true or false")
    return value


def _int(value: Any) -> int:
    if not isinstance(value, int) or isinstance(value, bool):
        raise ValueError("expected an integer")
    return value


def _num(value: Any) -> float:
    if not isinstance(value, int | float) or isinstance(value, bool):
        raise ValueError("expected a number")
    return float(value)


def _choice(value: Any, allowed: Sequence[str]) -> str:
    if value not in allowed:
        raise ValueError(f"expected one of {', '.join(allowed)}")
    return cast(str, value)


def _opt(value: Any, convert: Callable[[Any], T]) -> T | None:
    return None if value is None else convert(value)


__all__ = ["FORMAT", "policy_from_data", "policy_to_data"]
