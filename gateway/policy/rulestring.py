"""Claude Code permission-rule strings (`Tool`, `Tool(content)`, `mcp__server__*`) compiled."""

from __future__ import annotations

import re
from typing import NamedTuple

from gateway.policy.bash_rules import parse_bash_pattern
from gateway.policy.compiled import AnyInput, BashCommand, DomainRule, FieldRegex, Matcher, PathRule
from gateway.policy.domains import compile_domain_pattern
from gateway.policy.paths import compile_path_pattern

READ_TOOLS = ("Read", "Glob", "Grep", "LS")
EDIT_TOOLS = ("Edit", "MultiEdit", "Write", "NotebookEdit")
FAMILIES = {"Read": READ_TOOLS, "Edit": EDIT_TOOLS}
PATH_TOOLS = frozenset((*READ_TOOLS, *EDIT_TOOLS))
PRIMARY_FIELD = {
    "Task": "subagent_type",
    "Agent": "subagent_type",
    "WebSearch": "query",
    "Skill": "skill",
    "SlashCommand": "command",
}
_RULE = re.compile(r"^(?P<tool>[A-Za-z0-9_*.\-]+)(?:\((?P<content>.*)\))?$", re.S)


def tool_glob(pattern: str) -> re.Pattern[str] | None:
    """`mcp__server__*` -> a regex; `mcp__server` also covers every tool of that server."""
    if pattern.startswith("mcp__") and pattern.count("__") == 1:
        return re.compile(re.escape(pattern) + r"(?:__.*)?")
    if "*" in pattern:
        return re.compile(".*".join(re.escape(p) for p in pattern.split("*")))
    return None


def rule_tool(text: str) -> str | None:
    """The tool part of a rule string (`Bash` in `Bash(rm:*)`), or None when malformed."""
    found = _RULE.match(text.strip())
    return found["tool"] if found is not None else None


def glob_regex(text: str) -> re.Pattern[str]:
    return re.compile(".*".join(re.escape(p) for p in text.split("*")), re.S)


class ParsedRule(NamedTuple):
    tools: tuple[str, ...]
    """The tool names the rule names (empty when it names them by a glob)."""
    glob: re.Pattern[str] | None
    """`mcp__server__*`-style tool globs."""
    matcher: Matcher


def parse_rule(text: str) -> ParsedRule:
    """The tools and the matcher of one rule string; ValueError when malformed."""
    found = _RULE.match(text.strip())
    if found is None:
        raise ValueError(f"not a permission rule: {text!r} (expected Tool or Tool(specifier))")
    tool, content = found["tool"], found["content"]
    glob = tool_glob(tool)
    tools = () if glob is not None else FAMILIES.get(tool, (tool,))
    if content is None or content in ("", "*"):
        return ParsedRule(tools, glob, AnyInput())
    if glob is not None:
        raise ValueError(f"{text!r}: a tool pattern cannot take a specifier")
    return ParsedRule(tools, None, compile_content(tool, content))


def compile_content(tool: str, content: str) -> Matcher:
    if tool == "Bash":
        return BashCommand(parse_bash_pattern(content))
    if tool in PATH_TOOLS:
        return PathRule(compile_path_pattern(content))
    if tool == "WebFetch":
        return DomainRule(compile_domain_pattern(content))
    return FieldRegex(PRIMARY_FIELD.get(tool, ""), glob_regex(content), full=True)
