"""A policy's path rules indexed for checking many paths fast, each index worked out once and
hung on what it derives from (the layer, or the compiled policy), never on the process: the
deny and ask rules by the access they govern, their unions from UNION_FROM rules, the rules
a file tool's unions leave to match one by one, and where other names of a hard-linked file
are searched for (per working directory and home)."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from gateway.policy.builtin import UNSEARCHED
from gateway.policy.compiled import Layer, PathRule, Policy, Rule
from gateway.policy.paths import PathPattern, PatternUnion, union_of


@dataclass(frozen=True)
class ToolPaths:
    deny: PatternUnion | None
    """The union of the deny and ask path rules (matched anywhere, as they are)."""
    allow: PatternUnion | None
    """The union of the allow path rules (matched under their anchor only)."""
    left: dict[tuple[bool, bool], tuple[Rule, ...]]
    """The rules naming the tool less the deny and ask (first) or allow (second) path rules."""


def tool_paths(layer: Layer, tool: str) -> ToolPaths | None:
    """The unions of a layer's path rules for a tool, each when there are at least
    UNION_FROM such rules (None when neither is); worked out once per layer and tool."""
    key = ("tool paths", tool)
    if key in layer.memo:
        found: ToolPaths | None = layer.memo[key]
        return found
    rules = layer.by_tool.get(tool, ())
    paths = [r for r in rules if isinstance(r.matcher, PathRule)]
    deny = [path_pattern(r) for r in paths if r.decision != "allow"]
    allow = [path_pattern(r) for r in paths if r.decision == "allow"]
    found = None
    if len(deny) >= UNION_FROM or len(allow) >= UNION_FROM:
        left = {(d, a): tuple(r for r in rules if not (isinstance(r.matcher, PathRule) and (
                    a if r.decision == "allow" else d)))
                for d in (False, True) for a in (False, True)}
        found = ToolPaths(union_of(deny) if len(deny) >= UNION_FROM else None,
                          dataclasses.replace(union_of(allow), floating=None)
                          if len(allow) >= UNION_FROM else None, left)
    if len(layer.memo) >= 256:  # tool names come from the calls: any string
        layer.memo.clear()
    layer.memo[key] = found
    return found


UNION_FROM = 64
"""Rules in a family from which their union is compiled: compiling it costs about 40 us a
rule, once per process, which a command hook (one decision per process) would pay in full."""


def path_families(layer: Layer) -> dict[str, tuple[list[Rule], PatternUnion | None]]:
    """A layer's deny and ask path rules by the access they govern (Read: a read, Edit: a
    write), with their union when they are many, worked out once per layer."""
    known: dict[str, tuple[list[Rule], PatternUnion | None]] | None = layer.memo.get(
        ("path families",))
    if known is not None:
        return known
    families: dict[str, tuple[list[Rule], PatternUnion | None]] = {}
    for mode, tool in (("read", "Read"), ("write", "Edit")):
        rules = [r for r in layer.by_tool.get(tool, ()) if r.decision != "allow"
                 and isinstance(r.matcher, PathRule)]
        if rules:
            many = len(rules) >= UNION_FROM
            union = union_of([path_pattern(r) for r in rules]) if many else None
            families[mode] = (rules, union)
    layer.memo[("path families",)] = families
    return families


def path_pattern(rule: Rule) -> PathPattern:
    assert isinstance(rule.matcher, PathRule)
    return rule.matcher.pattern


def root_patterns(policy: Policy) -> tuple[PathPattern, ...]:
    """One pattern per distinct search root of the policy's deny and ask path rules (a
    root depends on the anchor and the literal prefix only), worked out once per policy.
    Some built-in files are not searched for other names (builtin.UNSEARCHED)."""
    known = policy.memo.get(("root patterns",))
    if known is not None:
        return known
    distinct: dict[tuple[str, bool, str], PathPattern] = {}
    for layer in policy.layers:
        for tool in ("Read", "Edit"):
            for rule in layer.by_tool.get(tool, ()):
                if (isinstance(rule.matcher, PathRule) and rule.decision != "allow"
                        and not rule.id.startswith(UNSEARCHED)):
                    pattern = rule.matcher.pattern
                    distinct.setdefault((pattern.anchor, pattern.floating, pattern.prefix),
                                        pattern)
    patterns = tuple(distinct.values())
    policy.memo[("root patterns",)] = patterns
    return patterns


def search_roots(policy: Policy, cwd: str, home: str) -> tuple[str, ...]:
    """Where other names of a hard-linked file are looked for: cwd and each deny or ask
    path rule's literal directory, as written (no symlink resolved), so fixed per policy,
    cwd and home directory."""
    key = ("search roots", cwd, home)
    known = policy.memo.get(key)
    if known is not None:
        return known
    roots = tuple(dict.fromkeys(
        (cwd or "/", *(p.search_root(cwd) for p in root_patterns(policy)))))
    if len(policy.memo) >= 256:  # a long-lived policy seeing many working directories
        policy.memo.clear()
    policy.memo[key] = roots
    return roots
