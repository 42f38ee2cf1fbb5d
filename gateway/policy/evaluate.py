"""decide(policy, call): the one decision function for every vantage point.

Each layer (file) is evaluated on its own: deny > ask > allow > the layer's default, with
monitor-mode rules recorded but not enforced. Layers then combine strictest-first (deny > ask >
allow; a layer that abstains has no say), so a lower file can add restrictions but never lift
an upper one. Pure apart from resolving symlinks of paths that exist.

A session under the OS sandbox compiled from the policy (`sandboxed`, see policy/sandbox.py)
gets the same decisions but one: a deny path rule that could apply only in a way the kernel
sees (a path computed at run time, a glob that names no file yet, a file an unknown program may
open, a hard-linked file whose other names could not all be searched) is left to the sandbox,
which holds it, instead of being denied as uncertain. The decision says so (`enforced_by`).
"""

from __future__ import annotations

import dataclasses
import json
import os
import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from gateway.policy.bash_rules import Match
from gateway.policy.compiled import (
    BUILTIN_LAYER,
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
from gateway.policy.paths import (
    PathPattern,
    PatternUnion,
    Targets,
    deciding,
    decision_home,
    expand_user,
    has_other_links,
    path_targets,
    union_of,
)
from gateway.policy.rulestring import PATH_TOOLS
from gateway.policy.shell.argv import normalize_name
from gateway.policy.shell.globs import glob_names, is_glob
from gateway.policy.shell.scan import Scan, SimpleCommand, scan
from gateway.policy.shell.words import Word
from gateway.types import Decision, DecisionKind, EnforcedBy, ToolCall

if TYPE_CHECKING:
    from gateway.policy.overlap import RuleShape

SEVERITY: dict[str, int] = {"deny": 3, "ask": 2, "allow": 1, "abstain": 0}
PATH_FIELDS = ("file_path", "notebook_path", "path")
_LONE_SURROGATE = re.compile("[\ud800-\udfff]")


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


@dataclass(frozen=True, slots=True)
class LayerOutcome:
    """What one layer (file) decided on its own, before the layers are combined."""

    layer: str
    decision: DecisionKind
    rule_id: str = ""
    reason: str = ""
    matched: str = ""


@dataclass(frozen=True)
class Explanation:
    decision: Decision
    hits: tuple[Hit, ...]
    scan: Scan | None
    layer_outcomes: tuple[LayerOutcome, ...]
    """What each layer decided, org first."""
    allow_withheld: str = ""
    """Why allow rules (and `default: allow`) could not cover this Bash command."""
    held: tuple[Hit, ...] = ()
    """Deny path rules that could apply only as the kernel sees, left to the OS sandbox."""


def decide(policy: Policy, call: ToolCall, *, sandboxed: bool = False,
           sandbox_unavailable: str = "") -> Decision:
    return explain(policy, call, sandboxed=sandboxed,
                   sandbox_unavailable=sandbox_unavailable).decision


LIMIT_RULE = "builtin:analysis-limit"
SANDBOX_RULE = "builtin:sandbox-required"
LOOKAHEAD_HITS = 8
"""Denied command names looked for in one unknown program's arguments before giving up."""


def explain(policy: Policy, call: ToolCall, *, sandboxed: bool = False,
            sandbox_unavailable: str = "") -> Explanation:
    """`sandboxed`: the session runs under the OS sandbox compiled from this policy (the
    caller has checked the fingerprint its settings carry; see handlers/decision.py).
    `sandbox_unavailable`: why the sandbox cannot start for this session ('' when it can or
    nobody tried): with `sandbox: required`, Bash is then denied. `~` stands for
    `call.environ`'s HOME (the password database's entry when it has none)."""
    with deciding(call.environ):
        return _explain(policy, call, sandboxed, sandbox_unavailable)


def _explain(policy: Policy, call: ToolCall, sandboxed: bool, sandbox_unavailable: str
             ) -> Explanation:
    if policy.sandbox == "required" and call.tool_name == "Bash":
        refusal = ""
        if sandbox_unavailable:
            refusal = (f"the policy requires Claude Code's OS sandbox for Bash, which cannot "
                       f"start here: {sandbox_unavailable}")
        elif _unsandboxed(call):
            refusal = ("the policy requires Claude Code's OS sandbox for every Bash command; "
                       "run it without dangerouslyDisableSandbox")
        if refusal:
            decision = Decision("deny", SANDBOX_RULE, refusal, policy_hash=policy.bundle_hash,
                                self_protection=policy.self_protection)
            return Explanation(decision, (), None, ())
    bash = _bash_scan(call)
    if bash is not None and bash.refused:
        decision = Decision("deny", LIMIT_RULE, f"agent-gateway: {bash.refused}",
                            policy_hash=policy.bundle_hash)
        return Explanation(decision, (), bash, ())
    all_hits: list[Hit] = []
    held: list[Hit] = []
    outcomes: list[LayerOutcome] = []
    withheld = _allow_withheld(bash) if bash is not None else ""
    resolved = _Resolved(policy, call, bash) if bash is not None and bash.accesses else None
    facts = _Facts(call)
    for layer in policy.layers:
        hits, allowed = _layer_hits(layer, call, bash, resolved, held if sandboxed else None,
                                    facts)
        all_hits.extend(hits)
        outcomes.append(_layer_outcome(layer, hits, allowed and not withheld, bool(withheld)))
    return Explanation(
        _combine(policy, outcomes, all_hits, held),
        tuple(all_hits),
        bash,
        tuple(outcomes),
        withheld,
        tuple(held),
    )


def _unsandboxed(call: ToolCall) -> bool:
    """A Bash call that asks Claude Code to run it outside the sandbox."""
    flag = call.tool_input.get("dangerouslyDisableSandbox")
    return flag is not None and flag is not False


def _allow_withheld(bash: Scan) -> str:
    """An allow promises that nothing else runs: never for a Bash command that is not fully
    known, or that carries code in options or environment (the safe-allow rule)."""
    if bash.unparseable:
        return f"it cannot be fully analysed ({bash.unparseable})"
    if bash.unsafe_for_allow:
        return bash.unsafe_for_allow
    for command in bash.commands:
        if command.carries_code:
            return f"`{command.text[:80]}`: {command.carries_code}"
        if command.speculative:
            return f"`{command.text[:80]}` may be run by a program the gateway does not know"
    return ""


def _bash_scan(call: ToolCall) -> Scan | None:
    if call.tool_name != "Bash":
        return None
    command = call.tool_input.get("command")
    return scan(command if isinstance(command, str) else "", call.cwd)


def _rules_for(layer: Layer, tool: str, named: Iterable[Rule] | None = None
               ) -> Iterable[Rule]:
    """The layer's rules for a tool: `named` (those naming it, when some are ruled out
    already) or all of them, then the tool globs that match it."""
    yield from layer.by_tool.get(tool, ()) if named is None else named
    for rule in layer.tool_globs:
        if rule.tool_glob is not None and rule.tool_glob.fullmatch(tool):
            yield rule


def _hit(layer: Layer, rule: Rule, matched: str, decision: DecisionKind | None = None,
         reason: str | None = None) -> Hit:
    return Hit(layer.name, rule.id, decision or rule.decision, rule.monitor,
               rule.reason if reason is None else reason, matched, rule.text)


def _layer_hits(layer: Layer, call: ToolCall, bash: Scan | None, resolved: _Resolved | None,
                held: list[Hit] | None, facts: _Facts) -> tuple[list[Hit], bool]:
    """Matching rules of one layer, and whether allow rules cover the whole call. `held`
    (a sandboxed session) collects what is left to the sandbox instead of denied."""
    hits: list[Hit] = []
    tool_allowed = False
    for rule in _rules_for(layer, call.tool_name, _path_rules_left(layer, call, facts)):
        matched = _match_call(rule, call, bash, facts)
        if matched is _CANNOT_TELL:
            hits.append(_uncertain(layer, rule, _summary(call), "it has other names (hard "
                                   "links) the gateway could not finish searching"))
        elif matched is not None:
            hits.append(_hit(layer, rule, matched))
            tool_allowed = tool_allowed or (rule.decision == "allow" and not rule.monitor)
    if bash is None:
        return hits, tool_allowed
    if resolved is not None:
        _file_hits(layer, call, bash, hits, resolved, held)
    return hits, _bash_hits(layer, bash, hits) or tool_allowed


class _Resolved:
    """Where each path a Bash command names lands, resolved once per decision for every
    layer (symlinks and hard links cost system calls)."""

    def __init__(self, policy: Policy, call: ToolCall, bash: Scan) -> None:
        self.call, self.bash = call, bash
        self.roots = _search_roots(policy, call.cwd, decision_home())
        self.cache: dict[tuple[str, bool], tuple[Targets | None, bool]] = {}
        self.forms: dict[Word, list[tuple[str, ...]] | None] = {}
        self.shapes: dict[int, RuleShape] = {}
        self.real: dict[str, str] = {}

    def could_name(self, path: Word, rule: Rule, *, disk: bool = True) -> bool:
        """A path known only at run time (a glob, a file find selects) may be one `rule`
        matches: by the names its pattern allows (`disk`: and by what is there now)."""
        from gateway.policy import overlap  # on first use: most paths are named in full

        assert isinstance(rule.matcher, PathRule)
        if path not in self.forms:
            self.forms[path] = overlap.path_forms(
                path, self.bash.cwds or (self.call.cwd or "/",), self.bash.cwd_unknown,
                self._realpath)
        shape = self.shapes.get(id(rule))
        if shape is None:
            shape = self.shapes[id(rule)] = overlap.rule_shape(
                rule.matcher.pattern, self.call.cwd, self._realpath)
        # A tree is what is there now: the files the command itself makes land elsewhere,
        # and a file copied from a protected one was read where it was.
        return overlap.could_name(
            self.forms[path], shape, rule.matcher.pattern, self.call.cwd,
            (bool(self.bash.creates) and not path.tree) or not disk,
            overlap.MAX_TREE_WALK if path.tree else overlap.MAX_WALK)

    def directory(self, tree: Word) -> bool:
        """Whether a tree's top may be a directory (a glob: it may)."""
        if tree.globby:
            return True
        bases = self.bash.cwds or (self.call.cwd or "/",)
        return any(os.path.isdir(os.path.join(base, expand_user(tree.text)))
                   for base in bases)

    def _realpath(self, path: str) -> str:
        if path not in self.real:
            self.real[path] = os.path.realpath(path)
        return self.real[path]

    def targets(self, path: Word) -> Targets | None:
        return self._resolve(path)[0]

    def bounded(self, path: Word) -> bool:
        """Its names are only known at run time, but only by its pattern: a glob that
        matches nothing yet in a command that may create files, a file find selects."""
        return path.dynamic or self._resolve(path)[1]

    def _resolve(self, path: Word) -> tuple[Targets | None, bool]:
        key = (path.text, is_glob(path))
        if key not in self.cache:
            self.cache[key] = _access_targets(*key, self.bash, self.call.cwd, self.roots)
        return self.cache[key]


class _Facts:
    """What a file tool's or WebFetch's rules are matched against, worked out once per
    decision for every rule of every layer (a policy may hold hundreds): where the file lands
    (symlinks and hard links cost system calls) and the URL's hosts."""

    def __init__(self, call: ToolCall) -> None:
        self.call = call
        self.raw_path = _path_input(call)
        self._written: Targets | None = None
        self._linked: bool | None = None
        self._searched: dict[tuple[str, ...], Targets] = {}
        self._hosts: tuple[str | None, ...] | None = None

    def written(self) -> Targets:
        """The path as written and with symlinks resolved."""
        if self._written is None:
            self._written = path_targets(self.raw_path or "", self.call.cwd)
        return self._written

    def linked(self) -> bool:
        """The file has other names (hard links), which are looked for under each rule's
        roots; most files have none, and then every rule sees the same names."""
        if self._linked is None:
            self._linked = has_other_links(self.written().names[-1])
        return self._linked

    def targets(self, roots: tuple[str, ...]) -> Targets:
        """`path_targets(raw, cwd, roots)`, computed once per distinct `roots`."""
        if not roots or not self.linked():
            return self.written()
        found = self._searched.get(roots)
        if found is None:
            found = self._searched[roots] = path_targets(self.raw_path or "", self.call.cwd,
                                                         roots)
        return found

    def hosts(self) -> tuple[str | None, ...]:
        if self._hosts is None:
            url = self.call.tool_input.get("url")
            self._hosts = url_hosts(url) if isinstance(url, str) else (None,)
        return self._hosts


def _path_rules_left(layer: Layer, call: ToolCall, facts: _Facts) -> tuple[Rule, ...] | None:
    """The layer's rules naming a file tool, less the deny and ask path rules, or the allow
    path rules, that their union says cannot match the file (in the rules' order); None
    when the rules are few (each is matched on its own) or the file is hard-linked (each
    rule searches its own roots for the other names)."""
    if facts.raw_path is None:
        return None
    paths = _tool_paths(layer, call.tool_name)
    if paths is None or facts.linked():
        return None
    names = facts.written().names
    skip_deny = paths.deny is not None and not paths.deny.matches(names, call.cwd)
    skip_allow = paths.allow is not None and not paths.allow.matches(names, call.cwd)
    return paths.left[(skip_deny, skip_allow)]


@dataclass(frozen=True)
class _ToolPaths:
    deny: PatternUnion | None
    """The union of the deny and ask path rules (matched anywhere, as they are)."""
    allow: PatternUnion | None
    """The union of the allow path rules (matched under their anchor only)."""
    left: dict[tuple[bool, bool], tuple[Rule, ...]]
    """The rules naming the tool less the deny and ask (first) or allow (second) path rules."""


_TOOL_PATHS: dict[tuple[int, str], tuple[Layer, _ToolPaths | None]] = {}


def _tool_paths(layer: Layer, tool: str) -> _ToolPaths | None:
    """The unions of a layer's path rules for a tool, each when there are at least
    UNION_FROM such rules (None when neither is); worked out once per layer and tool."""
    known = _TOOL_PATHS.get((id(layer), tool))
    if known is not None and known[0] is layer:
        return known[1]
    rules = layer.by_tool.get(tool, ())
    paths = [r for r in rules if isinstance(r.matcher, PathRule)]
    deny = [_path_pattern(r) for r in paths if r.decision != "allow"]
    allow = [_path_pattern(r) for r in paths if r.decision == "allow"]
    found = None
    if len(deny) >= UNION_FROM or len(allow) >= UNION_FROM:
        left = {(d, a): tuple(r for r in rules if not (isinstance(r.matcher, PathRule) and (
                    a if r.decision == "allow" else d)))
                for d in (False, True) for a in (False, True)}
        found = _ToolPaths(union_of(deny) if len(deny) >= UNION_FROM else None,
                           dataclasses.replace(union_of(allow), floating=None)
                           if len(allow) >= UNION_FROM else None, left)
    if len(_TOOL_PATHS) >= 256:
        _TOOL_PATHS.clear()
    _TOOL_PATHS[(id(layer), tool)] = (layer, found)
    return found


def _file_hits(layer: Layer, call: ToolCall, bash: Scan, hits: list[Hit],
               resolved: _Resolved, held: list[Hit] | None) -> None:
    """Read and Edit rules hold through Bash: every file a command reads or writes is
    checked like the file tools' paths (deny and ask rules; allow rules do not apply).
    What only the kernel can tell is uncertain, or, in a sandboxed session, `held`."""
    families = _path_families(layer)
    if not families:
        return

    def unsure(rule: Rule, matched: str, why: str) -> None:
        if held is not None and rule.decision == "deny":
            held.append(_hit(layer, rule, matched, "deny", f"{rule.reason or rule.text} "
                             f"(left to the OS sandbox: {why})"))
        else:
            hits.append(_uncertain(layer, rule, matched, why))

    seen: set[tuple[str, Word, bool]] = set()
    for access in bash.accesses:
        family = families.get(access.mode)
        key = (access.mode, access.path, access.possible)
        if family is None or key in seen:
            continue
        rules, union = family
        seen.add(key)
        path = access.path
        if path.dynamic and not path.pattern:
            rule = _could_match(rules, path.text, call.cwd)
            if rule is not None:
                unsure(rule, access.command, f"it {access.mode}s a path computed at run time")
            continue
        targets = None if path.dynamic else resolved.targets(path)
        names = targets.names if targets is not None else ()
        if (union is not None and targets is not None and targets.complete
                and not union.matches(names, call.cwd)):
            continue  # no rule of the family matches: most paths
        for rule in rules:
            matcher = rule.matcher
            assert isinstance(matcher, PathRule)
            if targets is None:
                # In a sandboxed session the kernel holds a deny rule whatever names the
                # pattern allows: the walk that would tell is not needed.
                sandbox_holds = held is not None and rule.decision == "deny"
                if (not sandbox_holds and resolved.bounded(path)
                        and not resolved.could_name(path, rule)):
                    continue  # no name the pattern allows is one the rule matches
                if sandbox_holds and path.tree and not (
                        resolved.directory(path) and resolved.could_name(path, rule, disk=False)):
                    continue  # a file, or a tree no name of which the rule can match
                unsure(rule, access.command, _unknown_names(path))
            elif matcher.pattern.matches(names, call.cwd, anywhere=True):
                if access.possible:
                    unsure(rule, access.command, "an unknown program may open it")
                else:
                    hits.append(_hit(layer, rule, access.command))
            elif not targets.complete:
                unsure(rule, access.command, "it has other names (hard links) the gateway "
                       "could not finish searching")
            else:
                continue
            break


_EXPANSION = re.compile(r"\$\{[^}]*\}|\$\(.*\)|`[^`]*`|\$[A-Za-z_0-9@*#?$!-]+")


def _unknown_names(path: Word) -> str:
    if path.pattern:
        return f"it names files chosen when it runs ({path.pattern[:80]})"
    return "a glob whose names are only known when it runs"


def _could_match(rules: list[Rule], text: str, cwd: str) -> Rule | None:
    """The first rule a run-time path could match. With nothing static after its last
    expansion (`"$f"`), any; with a static tail, the rules that match that tail placed in
    their own directory, the expansion supplying the start of the tail's first component
    when the tail does not begin one (`$(echo .e)nv` may be `.env`)."""
    tail = _EXPANSION.split(text)[-1]
    if not tail:
        return rules[0]
    partial, _, rest = tail.partition("/")
    for rule in rules:
        matcher = rule.matcher
        assert isinstance(matcher, PathRule)
        heads = _heads(matcher.pattern, partial, inner=bool(rest))
        if heads is None:
            return rule
        root = matcher.pattern.search_root(cwd)
        for head in heads:
            name = (head + tail).lstrip("/")
            if matcher.pattern.matches((os.path.join(root, name),), cwd, anywhere=True):
                return rule
    return None


def _heads(pattern: PathPattern, partial: str, *, inner: bool) -> tuple[str, ...] | None:
    """What a run-time value may end with to complete `partial` into a component of the
    pattern's names (the last component, or any when `inner`); None when the pattern's
    glob could take any such value."""
    if not partial:
        return ("",)
    components = pattern.source.rstrip("/").split("/")
    heads = [""]
    for component in components if inner else components[-1:]:
        if any(c in component for c in "*?["):
            suffix = component.rsplit("*", 1)[-1]
            if "*" not in component or any(c in suffix for c in "?[") or (
                    partial.endswith(suffix) or suffix.endswith(partial)):
                return None
        elif component.endswith(partial):
            heads.append(component[: len(component) - len(partial)])
    return tuple(heads)


_FAMILIES: dict[int, tuple[Layer, dict[str, tuple[list[Rule], PatternUnion | None]]]] = {}
UNION_FROM = 64
"""Rules in a family from which their union is compiled: compiling it costs about 40 us a
rule, once per process, which a command hook (one decision per process) would pay in full."""


def _path_families(layer: Layer) -> dict[str, tuple[list[Rule], PatternUnion | None]]:
    """A layer's deny and ask path rules by the access they govern (Read: a read, Edit: a
    write), with their union when they are many, worked out once per layer."""
    known = _FAMILIES.get(id(layer))
    if known is not None and known[0] is layer:
        return known[1]
    families: dict[str, tuple[list[Rule], PatternUnion | None]] = {}
    for mode, tool in (("read", "Read"), ("write", "Edit")):
        rules = [r for r in layer.by_tool.get(tool, ()) if r.decision != "allow"
                 and isinstance(r.matcher, PathRule)]
        if rules:
            many = len(rules) >= UNION_FROM
            union = union_of([_path_pattern(r) for r in rules]) if many else None
            families[mode] = (rules, union)
    if len(_FAMILIES) >= 64:
        _FAMILIES.clear()
    _FAMILIES[id(layer)] = (layer, families)
    return families


def _path_pattern(rule: Rule) -> PathPattern:
    assert isinstance(rule.matcher, PathRule)
    return rule.matcher.pattern


def _root_patterns(policy: Policy) -> tuple[PathPattern, ...]:
    """One pattern per distinct search root of the policy's deny and ask path rules (a
    root depends on the anchor and the literal prefix only), worked out once per policy."""
    known = policy.memo.get(("root patterns",))
    if known is not None:
        return known
    distinct: dict[tuple[str, bool, str], PathPattern] = {}
    for layer in policy.layers:
        for tool in ("Read", "Edit"):
            for rule in layer.by_tool.get(tool, ()):
                if isinstance(rule.matcher, PathRule) and rule.decision != "allow":
                    pattern = rule.matcher.pattern
                    distinct.setdefault((pattern.anchor, pattern.floating, pattern.prefix),
                                        pattern)
    patterns = tuple(distinct.values())
    policy.memo[("root patterns",)] = patterns
    return patterns


def _search_roots(policy: Policy, cwd: str, home: str) -> tuple[str, ...]:
    """Where other names of a hard-linked file are looked for: cwd and each deny or ask
    path rule's literal directory, as written (no symlink resolved), so fixed per policy,
    cwd and home directory."""
    key = ("search roots", cwd, home)
    known = policy.memo.get(key)
    if known is not None:
        return known
    roots = tuple(dict.fromkeys(
        (cwd or "/", *(p.search_root(cwd) for p in _root_patterns(policy)))))
    if len(policy.memo) >= 256:  # a long-lived policy seeing many working directories
        policy.memo.clear()
    policy.memo[key] = roots
    return roots


def _access_targets(raw: str, glob: bool, bash: Scan, cwd: str, roots: tuple[str, ...]
                    ) -> tuple[Targets | None, bool]:
    """Absolute forms of a path as the command could resolve it (symlinks, hard links,
    every directory it may `cd` to, glob matches); None for a glob whose names cannot be
    known before it runs, with whether its pattern bounds them (it matches nothing yet)."""
    bases = bash.cwds or (cwd or "/",)
    found: list[str] = []
    complete = True
    for base in bases:
        names = glob_names(raw, base, bash.glob_options, bool(bash.creates)) if glob else [raw]
        if not names:
            return None, names is not None
        for name in names:
            targets = path_targets(name, base, roots)
            found.extend(targets.names)
            complete = complete and targets.complete
    if bash.cwd_unknown and not raw.startswith(("/", "~")):
        found.append(raw)  # a floating rule (**/.env) still sees the name
    return Targets(tuple(dict.fromkeys(found)), complete), False


def _bash_hits(layer: Layer, bash: Scan, hits: list[Hit]) -> bool:
    """Adds per-command hits; True when every command that runs is allowed."""
    all_allowed = not bash.unparseable and bool(bash.commands)
    generic = layer.bash_generic
    for command in bash.commands:
        allowed = False
        named = layer.bash_by_name.get(command.name, ())
        for rule in (*named, *generic) if generic else named:
            if isinstance(rule.matcher, BashPipeline):
                continue
            result = _match_command(rule, command)
            if result == Match.NO:
                continue
            if command.speculative:
                if rule.decision != "allow":
                    hits.append(_uncertain(layer, rule, command.text,
                                           f"an unknown program ({command.via[-1][:-1]}) "
                                           "may run it"))
                continue
            if result == Match.YES:
                hits.append(_hit(layer, rule, command.text))
                allowed = allowed or (rule.decision == "allow" and not rule.monitor)
            elif rule.decision != "allow":
                hits.append(_uncertain(layer, rule, command.text,
                                       "a value computed at run time could match"))
        if command.opaque:
            _look_ahead(layer, command, hits)
        if not allowed or command.carries_code:  # wrappers too: allowing ls does not allow sudo ls
            all_allowed = False
    for rule in layer.bash_generic:
        if isinstance(rule.matcher, BashPipeline):
            chain = _pipeline(rule.matcher, bash)
            if chain:
                hits.append(_hit(layer, rule, chain))
    if bash.unparseable and layer.has_bash_deny:
        hits.append(Hit(layer.name, f"{layer.name}:unparseable", layer.unparseable,
                        layer.mode == "monitor",
                        f"{bash.unparseable}; such commands are not run while Bash deny "
                        "rules apply", "", "unparseable"))
    return all_allowed


def _uncertain(layer: Layer, rule: Rule, matched: str, why: str) -> Hit:
    return _hit(layer, rule, matched, layer.unparseable if rule.decision == "deny" else "ask",
                f"{rule.reason or rule.text} ({why})".strip())


def _look_ahead(layer: Layer, command: SimpleCommand, hits: list[Hit]) -> None:
    """An unknown program may be a wrapper: `frob --x rm -rf y` may run `rm -rf y`.

    Each argument that names a command a deny or ask rule is about is read as the start of
    a wrapped command; a match is uncertain (decided as the layer's `unparseable`).
    """
    found = 0
    words = command.words
    for start in range(1, len(words)):
        word = words[start]
        if word.dynamic or word.globby or (word.text.startswith(".") or ("/" in word.text
                                           and not word.text.startswith("/"))):
            continue
        name = normalize_name(word.text)
        rules = [r for r in layer.bash_by_name.get(name, ()) if r.decision != "allow"]
        if not rules:
            continue
        found += 1
        if found > LOOKAHEAD_HITS:
            return
        inner = SimpleCommand(name, " ".join(w.text for w in words[start:]), command.via,
                              words=tuple(words[start:]))
        for rule in rules:
            if _match_command(rule, inner) != Match.NO:
                hits.append(_uncertain(layer, rule, command.text,
                                       f"{command.name} is not a program the gateway knows; "
                                       f"it may run `{inner.text[:80]}`"))
                return


def _match_command(rule: Rule, command: SimpleCommand) -> int:
    matcher = rule.matcher
    if isinstance(matcher, BashCommand):
        return matcher.pattern.match(command)
    if isinstance(matcher, BashRegex):
        return Match.YES if matcher.regex.search(command.text) else Match.NO
    return Match.NO


def _pipeline(matcher: BashPipeline, bash: Scan) -> str:
    """Text of a producer -> consumer chain matching the stages, or ''.

    Linear in the flows' size: each flow's stages are walked once per rule stage.
    """
    commands = bash.commands
    for flow in bash.flows:
        chain: list[str] = []
        position = 0
        for stage in matcher.stages:
            found = None
            while position < len(flow) and found is None:
                start, end = flow[position]
                found = next((commands[k].text for k in range(start, end)
                              if any(p.match(commands[k]) for p in stage)), None)
                position += 1
            if found is None:
                break
            chain.append(found)
        else:
            return " | ".join(chain)
    return ""


_CANNOT_TELL = "\0cannot tell"
"""`_match_call`'s answer when a file's other names could not all be searched."""


def _match_call(rule: Rule, call: ToolCall, bash: Scan | None, facts: _Facts) -> str | None:
    """What the rule matched in the call ('' for the whole call), None, or _CANNOT_TELL."""
    matcher = rule.matcher
    if isinstance(matcher, AnyInput):
        return _summary(call)
    if isinstance(matcher, PathRule):
        if facts.raw_path is None:
            return None
        anywhere = rule.decision != "allow"
        # Other names of a hard-linked file are looked for where a deny or ask rule could see
        # them (cwd and the rule's own directory); a file with one name needs no roots.
        linked = anywhere and facts.linked()
        targets = facts.targets((call.cwd or "/", matcher.pattern.search_root(call.cwd))
                                if linked else ())
        if matcher.pattern.matches(targets.names, call.cwd, anywhere=anywhere):
            return targets.names[0]
        return None if targets.complete else _CANNOT_TELL
    if isinstance(matcher, DomainRule):
        hosts = facts.hosts()
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
            return _LONE_SURROGATE.sub("\ufffd", value)  # no file name holds one
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


def _layer_outcome(layer: Layer, hits: list[Hit], allowed: bool, withheld: bool = False
                   ) -> LayerOutcome:
    enforced = [h for h in hits if not h.monitor]
    for kind in ("deny", "ask"):
        for hit in enforced:
            if hit.decision == kind:
                return LayerOutcome(layer.name, hit.decision, hit.rule_id, hit.reason, hit.matched)
    if allowed:
        first = next(h for h in enforced if h.decision == "allow")
        return LayerOutcome(layer.name, "allow", first.rule_id, first.reason, first.matched)
    if layer.default == "abstain" or (layer.default == "allow" and withheld):
        return LayerOutcome(layer.name, "abstain")
    return LayerOutcome(layer.name, layer.default, f"{layer.name}:default",
                        f"no rule of {layer.name} matched; its default is {layer.default}")


def _combine(policy: Policy, outcomes: list[LayerOutcome], hits: list[Hit],
             held: list[Hit]) -> Decision:
    monitor_deny = next((h for h in hits if h.monitor and h.decision == "deny"), None)
    # Of equally strict outcomes, a policy file's names the rule its authors wrote; the
    # built-in layer's is the one left when no file's rule applies.
    best = max(outcomes, key=lambda o: (SEVERITY[o.decision], o.layer != BUILTIN_LAYER),
               default=None)
    kind: DecisionKind = best.decision if best is not None else "abstain"
    if best is not None and kind in ("deny", "ask"):
        rule_id, reason, matched = best.rule_id, best.reason, best.matched
    elif monitor_deny is not None:
        rule_id, matched = monitor_deny.rule_id, monitor_deny.matched
        reason = f"monitor mode, would deny: {monitor_deny.reason}".rstrip(": ")
    elif best is not None:
        rule_id, reason, matched = best.rule_id, best.reason, best.matched
    else:
        rule_id = reason = matched = ""
    enforced_by: EnforcedBy = "hook"
    enforced = sorted((h for h in held if not h.monitor), key=lambda h: h.layer == BUILTIN_LAYER)
    if enforced and kind not in ("deny", "ask"):
        enforced_by = "sandbox"
        if not rule_id:
            rule_id, reason, matched = enforced[0].rule_id, enforced[0].reason, enforced[0].matched
    return Decision(kind, rule_id, reason, monitor_deny is not None, matched, policy.bundle_hash,
                    policy.self_protection, enforced_by)
