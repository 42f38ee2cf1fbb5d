"""A rule matched against a tool call's own input: a file tool's path (with symlinks and
hard links resolved once per decision, and the rules a union of many rules out), a URL's
hosts, a field's value; what a rule matched, for the decision's explanation."""

from __future__ import annotations

import json
import re

from gateway.policy.compiled import AnyInput, DomainRule, FieldRegex, Layer, PathRule, Rule
from gateway.policy.credential_stores import RULE_PREFIX as STORE_RULE_PREFIX
from gateway.policy.domains import url_hosts
from gateway.policy.pathrules import tool_paths
from gateway.policy.paths import Targets, has_other_links, path_targets
from gateway.policy.rulestring import PATH_TOOLS
from gateway.policy.shell.scan import Scan
from gateway.types import ToolCall

PATH_FIELDS = ("file_path", "notebook_path", "path")
_LONE_SURROGATE = re.compile("[\ud800-\udfff]")


class CallFacts:
    """What a file tool's or WebFetch's rules are matched against, worked out once per
    decision for every rule of every layer (a policy may hold hundreds): where the file lands
    (symlinks and hard links cost system calls) and the URL's hosts."""

    def __init__(self, call: ToolCall) -> None:
        self.call = call
        self.raw_path = path_input(call)
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


def path_rules_left(layer: Layer, call: ToolCall, facts: CallFacts) -> tuple[Rule, ...] | None:
    """The layer's rules naming a file tool, less the deny and ask path rules, or the allow
    path rules, that their union says cannot match the file (in the rules' order); None
    when the rules are few (each is matched on its own) or the file is hard-linked (each
    rule searches its own roots for the other names)."""
    if facts.raw_path is None or call.tool_name in SEARCH_TOOLS:
        return None
    paths = tool_paths(layer, call.tool_name)
    if paths is None or facts.linked():
        return None
    names = facts.written().names
    skip_deny = paths.deny is not None and not paths.deny.matches(names, call.cwd)
    skip_allow = paths.allow is not None and not paths.allow.matches(names, call.cwd)
    return paths.left[(skip_deny, skip_allow)]


SEARCH_TOOLS = ("Grep", "Glob", "LS")


def _searches(trees: tuple[str, ...], root: str) -> bool:
    return any(root == tree or root.startswith(tree.rstrip("/") + "/") for tree in trees)


CANNOT_TELL = "\0cannot tell"
"""`match_call`'s answer when a file's other names could not all be searched."""


def match_call(rule: Rule, call: ToolCall, bash: Scan | None, facts: CallFacts) -> str | None:
    """What the rule matched in the call ('' for the whole call), None, or CANNOT_TELL."""
    matcher = rule.matcher
    if isinstance(matcher, AnyInput):
        return summary(call)
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
        if (anywhere and call.tool_name in SEARCH_TOOLS and rule.id.startswith(STORE_RULE_PREFIX)
                and _searches(targets.names, matcher.pattern.search_root(call.cwd))):
            # Claude Code's own searches skip a directory its denies name (~/.ssh/**), not a
            # file such as ~/.netrc: a search over a tree holding one is refused
            return targets.names[0]
        return None if targets.complete else CANNOT_TELL
    if isinstance(matcher, DomainRule):
        hosts = facts.hosts()
        hits = [host or "" for host in hosts if matcher.pattern.matches(host)]
        every = len(hits) == len(hosts)  # allow needs every reading of the URL to match
        return hits[0] if hits and (every or rule.decision != "allow") else None
    if isinstance(matcher, FieldRegex):
        value = input_field(call, matcher.field)
        found = matcher.regex.fullmatch(value) if matcher.full else matcher.regex.search(value)
        return value[:200] if found else None
    return None  # Bash command rules are matched per simple command


def path_input(call: ToolCall) -> str | None:
    if call.tool_name not in PATH_TOOLS:
        return None
    for name in PATH_FIELDS:
        value = call.tool_input.get(name)
        if isinstance(value, str) and value:
            return _LONE_SURROGATE.sub("\ufffd", value)  # no file name holds one
    return "." if call.tool_name in ("Glob", "Grep", "LS") else None


def input_field(call: ToolCall, name: str) -> str:
    if name:
        value = call.tool_input.get(name)
        return value if isinstance(value, str) else json.dumps(value, sort_keys=True)
    return json.dumps(dict(call.tool_input), sort_keys=True)


def summary(call: ToolCall) -> str:
    for key in ("command", "file_path", "url", "query", "path"):
        value = call.tool_input.get(key)
        if isinstance(value, str):
            return value[:200]
    return call.tool_name
