"""Read and Edit rules held through Bash: every file a command reads or writes, resolved
as the command could resolve it (symlinks, hard links, each directory it may `cd` to, glob
matches), checked against the deny and ask path rules; what only the kernel can tell (a path
computed at run time, a glob that names no file yet, a file an unknown program may open) is
uncertain, or in a sandboxed session left to the sandbox."""

from __future__ import annotations

import functools
import os
import re
from typing import TYPE_CHECKING

from gateway.policy.builtin import NAMED_ONLY
from gateway.policy.compiled import Layer, PathRule, Policy, Rule
from gateway.policy.outcome import Hit, hit, uncertain
from gateway.policy.pathrules import path_families, search_roots
from gateway.policy.paths import PathPattern, Targets, decision_home, expand_user, path_targets
from gateway.policy.shell.globs import glob_names, is_glob
from gateway.policy.shell.scan import Scan
from gateway.policy.shell.words import Word
from gateway.types import ToolCall

if TYPE_CHECKING:
    from gateway.policy.overlap import RuleShape


class ResolvedPaths:
    """Where each path a Bash command names lands, resolved once per decision for every
    layer (symlinks and hard links cost system calls)."""

    def __init__(self, policy: Policy, call: ToolCall, bash: Scan) -> None:
        self.call, self.bash = call, bash
        self.roots = search_roots(policy, call.cwd, decision_home())
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


def file_hits(layer: Layer, call: ToolCall, bash: Scan, hits: list[Hit],
              resolved: ResolvedPaths, held: list[Hit] | None) -> None:
    """Read and Edit rules hold through Bash: every file a command reads or writes is
    checked like the file tools' paths (deny and ask rules; allow rules do not apply).
    What only the kernel can tell is uncertain, or, in a sandboxed session, `held`."""
    families = path_families(layer)
    if not families:
        return
    unsure = functools.partial(_unsure, layer, hits, held)
    seen: set[tuple[str, Word, bool]] = set()
    for access in bash.accesses:
        family = families.get(access.mode)
        key = (access.mode, access.path, access.possible)
        if family is None or key in seen:
            continue
        rules, union = family
        seen.add(key)
        path = access.path
        targets = None if path.dynamic else resolved.targets(path)
        names = targets.names if targets is not None else ()
        run_time = None
        if path.dynamic or bash.cwd_unknown:
            unnamed = [r for r in rules if r.id not in NAMED_ONLY]
            named_by_tail = _tail_match(unnamed, path)
            if named_by_tail is not None:  # `$(ls -d ../x*)/.env` is a .env wherever it is
                if access.possible:
                    unsure(named_by_tail, access.command, "an unknown program may open it")
                else:
                    hits.append(hit(layer, named_by_tail, access.command))
                continue
            run_time = _run_time_path(unnamed, path, names, bash.cwd_unknown and targets
                                      is not None, call.cwd, access.mode) if unnamed else None
        if run_time is not None:
            if run_time[0] is not None:
                unsure(run_time[0], access.command, run_time[1])
            continue
        if (union is not None and targets is not None and targets.complete
                and not union.matches(names, call.cwd)):
            continue  # no rule of the family matches: most paths
        for rule in rules:
            matcher = rule.matcher
            assert isinstance(matcher, PathRule)
            if targets is None:
                if rule.id in NAMED_ONLY:
                    continue
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
                    hits.append(hit(layer, rule, access.command))
            elif not targets.complete:
                unsure(rule, access.command, "it has other names (hard links) the gateway "
                       "could not finish searching")
            else:
                continue
            break


def _unsure(layer: Layer, hits: list[Hit], held: list[Hit] | None, rule: Rule,
            matched: str, why: str) -> None:
    """A rule the hook cannot tell about: held for the OS sandbox (a sandboxed session's
    deny), or an uncertain hit."""
    if held is not None and rule.decision == "deny":
        held.append(hit(layer, rule, matched, "deny", f"{rule.reason or rule.text} "
                        f"(left to the OS sandbox: {why})"))
    else:
        hits.append(uncertain(layer, rule, matched, why))


def _run_time_path(rules: list[Rule], path: Word, names: tuple[str, ...], cwd_unknown: bool,
                   cwd: str, mode: str) -> tuple[Rule | None, str] | None:
    """For a path only known when the command runs: (a rule it may match, or None; why).
    None for a path the rules are checked against as it is named."""
    if path.dynamic and not path.pattern:
        return _could_match(rules, path.text, cwd), f"it {mode}s a path computed at run time"
    if (cwd_unknown and not path.text.startswith(("/", "~"))
            and not _named(rules, names, cwd)):
        # `cd "$(f)"; cat x`: x may be under any directory, a rule's own among them
        return (_could_match(rules, f"$PWD/{path.text}", cwd),
                f"it {mode}s a path relative to a directory only known when it runs")
    return None


def _tail_match(rules: list[Rule], path: Word) -> Rule | None:
    """A floating rule (`**/.env`, `*.pem`, `**/secrets/**`) that the static components at
    the end of a run-time path match on their own: every directory the expansion may stand
    for gives a name the rule matches, in the project or outside it, where the sandbox is
    not told the rule."""
    tail = _EXPANSION.split(path.text)[-1] if path.dynamic else path.text
    if not tail.startswith("/") or not tail.strip("/") or any(c in tail for c in "*?["):
        return None
    rest = os.path.normpath(tail).lstrip("/")
    if rest.startswith(".."):
        return None
    for rule in rules:
        pattern = rule.matcher.pattern if isinstance(rule.matcher, PathRule) else None
        if pattern is not None and pattern.floating and pattern.regex.match(rest):
            return rule
    return None


_EXPANSION = re.compile(r"\$\{[^}]*\}|\$\(.*\)|`[^`]*`|\$[A-Za-z_0-9@*#?$!-]+")


def _unknown_names(path: Word) -> str:
    if path.pattern:
        return f"it names files chosen when it runs ({path.pattern[:80]})"
    return "a glob whose names are only known when it runs"


def _named(rules: list[Rule], names: tuple[str, ...], cwd: str) -> bool:
    """Whether a rule matches one of the names as they are (a floating rule's `.env`)."""
    return any(isinstance(r.matcher, PathRule)
               and r.matcher.pattern.matches(names, cwd, anywhere=True) for r in rules)


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
