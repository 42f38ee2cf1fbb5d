"""decide(policy, call): the one decision function for every vantage point.

Each layer (file) is evaluated on its own: deny > ask > allow > the layer's default, with
monitor-mode rules recorded but not enforced. Layers then combine strictest-first (deny > ask >
allow; a layer that abstains has no say), so a lower file can add restrictions but never lift
an upper one. Pure apart from resolving symlinks of paths that exist.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass

from gateway.policy.bash_rules import Match
from gateway.policy.compiled import (
    AnyInput,
    BashCommand,
    BashPipeline,
    BashRegex,
    DomainRule,
    FieldRegex,
    Layer,
    PathRule,
    Policy,
    Rule,
)
from gateway.policy.domains import url_hosts
from gateway.policy.paths import path_targets
from gateway.policy.rulestring import PATH_TOOLS
from gateway.policy.shell.scan import Scan, SimpleCommand, scan
from gateway.types import Decision, DecisionKind, ToolCall

SEVERITY: dict[str, int] = {"deny": 3, "ask": 2, "allow": 1, "abstain": 0}
PATH_FIELDS = ("file_path", "notebook_path", "path")


@dataclass(frozen=True)
class Hit:
    """One rule (or synthetic rule) that matched, with what it matched."""

    layer: str
    rule_id: str
    decision: DecisionKind
    monitor: bool
    reason: str
    matched: str
    rule_text: str


@dataclass(frozen=True)
class Explanation:
    decision: Decision
    hits: tuple[Hit, ...]
    scan: Scan | None
    layer_outcomes: tuple[tuple[str, DecisionKind, str], ...]
    """(layer, kind, rule id) per layer."""


def decide(policy: Policy, call: ToolCall) -> Decision:
    return explain(policy, call).decision


def explain(policy: Policy, call: ToolCall) -> Explanation:
    bash = _bash_scan(call)
    all_hits: list[Hit] = []
    outcomes: list[tuple[str, DecisionKind, str, str, str]] = []
    for layer in policy.layers:
        hits, allowed = _layer_hits(layer, call, bash)
        all_hits.extend(hits)
        outcomes.append(_layer_outcome(layer, hits, allowed))
    return Explanation(
        _combine(policy, outcomes, all_hits),
        tuple(all_hits),
        bash,
        tuple((name, kind, rid) for name, kind, rid, _, _ in outcomes),
    )


def _bash_scan(call: ToolCall) -> Scan | None:
    if call.tool_name != "Bash":
        return None
    command = call.tool_input.get("command")
    return scan(command if isinstance(command, str) else "")


def _rules_for(layer: Layer, tool: str) -> Iterable[Rule]:
    yield from layer.by_tool.get(tool, ())
    for rule in layer.tool_globs:
        if rule.tool_glob is not None and rule.tool_glob.fullmatch(tool):
            yield rule


def _hit(layer: Layer, rule: Rule, matched: str, decision: DecisionKind | None = None,
         reason: str | None = None) -> Hit:
    return Hit(layer.name, rule.id, decision or rule.decision, rule.monitor,
               rule.reason if reason is None else reason, matched, rule.text)


def _layer_hits(layer: Layer, call: ToolCall, bash: Scan | None) -> tuple[list[Hit], bool]:
    """Matching rules of one layer, and whether allow rules cover the whole call."""
    hits: list[Hit] = []
    tool_allowed = False
    for rule in _rules_for(layer, call.tool_name):
        matched = _match_call(rule, call, bash)
        if matched is not None:
            hits.append(_hit(layer, rule, matched))
            tool_allowed = tool_allowed or (rule.decision == "allow" and not rule.monitor)
    if bash is None:
        return hits, tool_allowed
    return hits, _bash_hits(layer, bash, hits) or tool_allowed


def _bash_hits(layer: Layer, bash: Scan, hits: list[Hit]) -> bool:
    """Adds per-command hits; True when every command that runs is allowed."""
    if bash.unparseable and layer.has_bash_deny:
        hits.append(Hit(layer.name, f"{layer.name}:unparseable", layer.unparseable,
                        layer.mode == "monitor",
                        f"{bash.unparseable}; such commands are not run while Bash deny "
                        "rules apply", "", "unparseable"))
    all_allowed = not bash.unparseable and bool(bash.commands)
    for command in bash.commands:
        allowed = False
        for rule in (*layer.bash_by_name.get(command.name, ()), *layer.bash_generic):
            if isinstance(rule.matcher, BashPipeline):
                continue
            result = _match_command(rule, command)
            if result == Match.NO:
                continue
            if result == Match.YES:
                hits.append(_hit(layer, rule, command.text))
                allowed = allowed or (rule.decision == "allow" and not rule.monitor)
            elif rule.decision != "allow":
                hits.append(_hit(layer, rule, command.text,
                                 layer.unparseable if rule.decision == "deny" else "ask",
                                 f"{rule.reason or rule.text} (a value computed at run time "
                                 "could match)".strip()))
        if not allowed:  # wrappers too: allowing ls does not allow sudo ls
            all_allowed = False
    for rule in layer.bash_generic:
        if isinstance(rule.matcher, BashPipeline):
            chain = _pipeline(rule.matcher, bash)
            if chain:
                hits.append(_hit(layer, rule, chain))
    return all_allowed


def _match_command(rule: Rule, command: SimpleCommand) -> int:
    matcher = rule.matcher
    if isinstance(matcher, BashCommand):
        return matcher.pattern.match(command)
    if isinstance(matcher, BashRegex):
        return Match.YES if matcher.regex.search(command.text) else Match.NO
    return Match.NO


def _pipeline(matcher: BashPipeline, bash: Scan) -> str:
    """Text of a producer -> consumer chain matching the stages, or ''."""
    frontier = [i for i, c in enumerate(bash.commands)
                if any(p.match(c) for p in matcher.stages[0])]
    chain = {i: bash.commands[i].text for i in frontier}
    for stage in matcher.stages[1:]:
        nxt: dict[int, str] = {}
        for j, command in enumerate(bash.commands):
            if not any(p.match(command) for p in stage):
                continue
            for i in chain:
                if bash.feeds(i, j):
                    nxt[j] = f"{chain[i]} | {command.text}"
                    break
        chain = nxt
        if not chain:
            return ""
    return next(iter(chain.values()), "")


def _match_call(rule: Rule, call: ToolCall, bash: Scan | None) -> str | None:
    """What the rule matched in the call ('' for the whole call), or None."""
    matcher = rule.matcher
    if isinstance(matcher, AnyInput):
        return _summary(call)
    if isinstance(matcher, PathRule):
        raw = _path_input(call)
        if raw is None:
            return None
        targets = path_targets(raw, call.cwd)
        anywhere = rule.decision != "allow"
        return targets[0] if matcher.pattern.matches(targets, call.cwd, anywhere=anywhere) else None
    if isinstance(matcher, DomainRule):
        url = call.tool_input.get("url")
        hosts = url_hosts(url) if isinstance(url, str) else (None,)
        hits = [host or "" for host in hosts if matcher.pattern.matches(host)]
        every = len(hits) == len(hosts)  # allow needs every reading of the URL to match
        return hits[0] if hits and (every or rule.decision != "allow") else None
    if isinstance(matcher, FieldRegex):
        value = _field(call, matcher.field)
        found = matcher.regex.fullmatch(value) if matcher.full else matcher.regex.search(value)
        return value[:200] if found else None
    return None  # Bash command rules are matched per simple command


def _path_input(call: ToolCall) -> str | None:
    if call.tool_name not in PATH_TOOLS:
        return None
    for name in PATH_FIELDS:
        value = call.tool_input.get(name)
        if isinstance(value, str) and value:
            return value
    return "." if call.tool_name in ("Glob", "Grep", "LS") else None


def _field(call: ToolCall, name: str) -> str:
    if name:
        value = call.tool_input.get(name)
        return value if isinstance(value, str) else json.dumps(value, sort_keys=True)
    return json.dumps(dict(call.tool_input), sort_keys=True)


def _summary(call: ToolCall) -> str:
    for key in ("command", "file_path", "url", "query", "path"):
        value = call.tool_input.get(key)
        if isinstance(value, str):
            return value[:200]
    return call.tool_name


def _layer_outcome(layer: Layer, hits: list[Hit], allowed: bool
                   ) -> tuple[str, DecisionKind, str, str, str]:
    enforced = [h for h in hits if not h.monitor]
    for kind in ("deny", "ask"):
        for hit in enforced:
            if hit.decision == kind:
                return layer.name, hit.decision, hit.rule_id, hit.reason, hit.matched
    if allowed:
        first = next(h for h in enforced if h.decision == "allow")
        return layer.name, "allow", first.rule_id, first.reason, first.matched
    if layer.default == "abstain":
        return layer.name, "abstain", "", "", ""
    return (layer.name, layer.default, f"{layer.name}:default",
            f"no rule of {layer.name} matched; its default is {layer.default}", "")


def _combine(policy: Policy, outcomes: list[tuple[str, DecisionKind, str, str, str]],
             hits: list[Hit]) -> Decision:
    monitor_deny = next((h for h in hits if h.monitor and h.decision == "deny"), None)
    best = max(outcomes, key=lambda o: SEVERITY[o[1]], default=None)
    kind: DecisionKind = best[1] if best is not None else "abstain"
    if best is not None and kind in ("deny", "ask"):
        _, _, rule_id, reason, matched = best
    elif monitor_deny is not None:
        rule_id, matched = monitor_deny.rule_id, monitor_deny.matched
        reason = f"monitor mode, would deny: {monitor_deny.reason}".rstrip(": ")
    elif best is not None:
        _, _, rule_id, reason, matched = best
    else:
        rule_id = reason = matched = ""
    return Decision(kind, rule_id, reason, monitor_deny is not None, matched, policy.bundle_hash)
