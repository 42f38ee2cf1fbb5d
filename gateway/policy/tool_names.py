"""Tool names Claude Code knows (claude_code_tools.yaml), for errors about names that match
nothing: a misspelled `Bsh(rm:*)` is valid syntax and silently never applies, in the gateway
and in Claude Code alike. Tools of an SDK app are declared in a policy file's `tools:`."""

from __future__ import annotations

import difflib
import functools
import re
from collections.abc import Iterator, Sequence
from importlib import resources

import yaml

from gateway.errors import PolicyError
from gateway.policy.model import PolicyFile
from gateway.policy.rulestring import rule_tool
from gateway.policy.yamlsrc import Loc, Source

_MCP = re.compile(r"^mcp__[A-Za-z0-9_\-]+(?:__[A-Za-z0-9_\-*]+)?$")


@functools.cache
def known_tools() -> frozenset[str]:
    text = resources.files("gateway.policy").joinpath("claude_code_tools.yaml").read_text("utf-8")
    data = yaml.safe_load(text)
    return frozenset(name for names in data.values() for name in names)


def unknown_tool(name: str, declared: frozenset[str] = frozenset()) -> str | None:
    """None for a tool Claude Code has (or an MCP name, a glob, a declared tool); else the
    error's text."""
    if name in known_tools() or name in declared or _MCP.match(name) or "*" in name:
        return None
    close = difflib.get_close_matches(name, sorted(known_tools() | declared), n=1, cutoff=0.6)
    hint = f" (did you mean {close[0]}?)" if close else ""
    return (f"Claude Code has no tool named {name!r}{hint}: this rule never matches "
            "(declare an SDK app's own tools under tools:)")


def tool_problems(files: Sequence[tuple[Source, PolicyFile]]) -> list[PolicyError]:
    """One error (at its file:line) for every rule naming a tool Claude Code does not have
    and no file of the bundle declares: such a rule would silently never apply, so no
    policy holding one is loaded."""
    declared = frozenset(name for _, spec in files for name in spec.tools)
    errors = []
    for source, spec in files:
        for loc, name in _tool_names(spec):
            problem = unknown_tool(name, declared)
            if problem is not None:
                errors.append(PolicyError(problem, path=source.path, line=source.line(loc)))
    return errors


def tool_errors(files: Sequence[tuple[Source, PolicyFile]]) -> list[str]:
    """`file:line: error: ...` for each of tool_problems (`policy check` prints them all)."""
    return [f"{e.path}:{e.line}: error: {e.message}" for e in tool_problems(files)]


def _tool_names(spec: PolicyFile) -> Iterator[tuple[Loc, str]]:
    for decision in ("deny", "ask", "allow"):
        for index, text, _ in spec.permissions.entries(decision):
            name = rule_tool(text)
            if name is not None:
                yield ("permissions", decision, index), name
    for index, rule in enumerate(spec.rules):
        if rule.rule is not None and (name := rule_tool(rule.rule)) is not None:
            yield ("rules", index, "rule"), name
        elif rule.tool is not None:
            yield ("rules", index, "tool"), rule.tool
