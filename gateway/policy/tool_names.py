"""Tool names Claude Code knows (claude_code_tools.yaml), for warnings about names that match
nothing: a misspelled `Bsh(rm:*)` is valid syntax and silently never applies."""

from __future__ import annotations

import difflib
import functools
import re
from collections.abc import Iterator, Sequence
from importlib import resources

import yaml

from gateway.policy.model import PolicyFile
from gateway.policy.rulestring import rule_tool
from gateway.policy.yamlsrc import Loc, Source

_MCP = re.compile(r"^mcp__[A-Za-z0-9_\-]+(?:__[A-Za-z0-9_\-*]+)?$")


@functools.cache
def known_tools() -> frozenset[str]:
    text = resources.files("gateway.policy").joinpath("claude_code_tools.yaml").read_text("utf-8")
    data = yaml.safe_load(text)
    return frozenset(name for names in data.values() for name in names)


def unknown_tool(name: str) -> str | None:
    """None for a tool Claude Code has (or an MCP name, or a glob); else a warning's text."""
    if name in known_tools() or _MCP.match(name) or "*" in name:
        return None
    close = difflib.get_close_matches(name, sorted(known_tools()), n=1, cutoff=0.6)
    hint = f" (did you mean {close[0]}?)" if close else ""
    return f"Claude Code has no tool named {name!r}{hint}: this rule never matches"


def tool_warnings(files: Sequence[tuple[Source, PolicyFile]]) -> list[str]:
    """`file:line: warning: ...` for every rule naming a tool Claude Code does not have."""
    warnings = []
    for source, spec in files:
        for loc, name in _tool_names(spec):
            problem = unknown_tool(name)
            if problem is not None:
                warnings.append(f"{source.path}:{source.line(loc)}: warning: {problem}")
    return warnings


def _tool_names(spec: PolicyFile) -> Iterator[tuple[Loc, str]]:
    for decision in ("deny", "ask", "allow"):
        for index, text in enumerate(getattr(spec.permissions, decision)):
            name = rule_tool(text)
            if name is not None:
                yield ("permissions", decision, index), name
    for index, rule in enumerate(spec.rules):
        if rule.rule is not None and (name := rule_tool(rule.rule)) is not None:
            yield ("rules", index, "rule"), name
        elif rule.tool is not None:
            yield ("rules", index, "tool"), rule.tool
