"""How Claude Code 2.1.332 reads a permission rule, beside how the gateway reads it.

The gateway takes Claude Code's rule syntax, but a few spellings mean something else to Claude
Code (each measured on 2.1.332 with the rule in `permissions.deny`, tests/e2e/test_rule_parity.py):

- `Bash(X:*)` where X holds a `*`: Claude Code warns that the prefix is literal (the `*` is
  not expanded); the gateway globs it within its word.
- `Bash(X:* Y)`: a `:*` not at the end is a `*` wildcard with a literal `:` to Claude Code.
- `Bash(...)` with a `*` other than one trailing ` *` word: Claude Code's `*` matches any text,
  spaces included (`npm run test*` also matches `npm run test all`); the gateway's `*` globs
  within a word, and a lone `*` word spans zero or more words.
- `/path` in a file rule: the gateway's project root (the session's directory); Claude Code's
  is the settings file's own (the project's for `.claude/settings*.json`, another elsewhere:
  `--settings`, a managed drop-in). `./path` means the session's directory to both.
- `Write(...)`, `NotebookEdit(...)`, `MultiEdit(...)`, `Glob(...)` with a path: Claude Code
  warns that only `Edit(...)` / `Read(...)` rules are matched by file checks, so they never
  match there; `LS` and `MultiEdit` are tools it no longer has.
- `WebSearch(...)` with a `*`: Claude Code skips the rule (no wildcards for WebSearch).

What holds on both sides: bare tools, `Tool(*)`, MCP names and `mcp__...*` patterns, Bash
prefixes and exact commands without other stars, `//abs`, `~/x`, `./x`, `x/y`, `**/x`,
`WebFetch(domain:HOST)` and `domain:*.HOST`. Claude Code matches a Bash rule on the command as
written, the gateway on its parsed options as well (`rm -fr` for `rm -rf:*`), and a pattern
without a slash only inside the session's directory, where the gateway also applies it
outside: on those the floor Claude Code holds is narrower, never different.
"""

from __future__ import annotations

import shlex
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

from gateway.policy.model import PolicyFile
from gateway.policy.rulestring import PATH_TOOLS, rule_tool
from gateway.policy.yamlsrc import Loc, Source

CLAUDE_CODE_VERSION = "2.1.332"
_EDIT_ONLY = ("Write", "NotebookEdit", "MultiEdit")
_GONE = ("LS", "MultiEdit")
"""Tool names Claude Code 2.1.332 says match no known tool."""


@dataclass(frozen=True)
class Reading:
    """One rule on both sides."""

    rule: str
    same: bool
    """Claude Code enforces the rule as written with the gateway's meaning."""
    mirror: str | None
    """What to put in Claude Code's `permissions.deny` for it: the rule itself, a rewrite in
    Claude Code's syntax with the gateway's meaning, or None when there is none."""
    gateway: str = ""
    """What the gateway does with it (when not the same)."""
    claude: str = ""
    """What Claude Code does with it (when not the same)."""


def read_rule(rule: str) -> Reading:
    """How each side reads one well-formed rule string."""
    text = rule.strip()
    tool = rule_tool(text)
    if tool is None or not text.endswith(")") or "(" not in text:
        return Reading(rule, True, rule)
    content = text[text.index("(") + 1 : -1]
    if content in ("", "*"):
        return Reading(rule, True, rule)
    if tool == "Bash":
        return _bash(rule, content)
    if tool in PATH_TOOLS:
        return _path(rule, tool, content)
    if tool == "WebSearch" and "*" in content:
        return Reading(rule, False, None, "matches search queries by the glob",
                       "skips the rule (WebSearch does not support wildcards)")
    return Reading(rule, True, rule)


def _bash(rule: str, content: str) -> Reading:
    prefix = content.endswith(":*")
    body = content[:-2] if prefix else content
    if prefix and "*" in body:
        rewrite = _prefix_rewrite(body)
        return Reading(
            rule, False, f"Bash({rewrite})" if rewrite else None,
            f"a prefix whose * matches within its word (`{_example(body)}`)",
            "a literal prefix (the * is not expanded): it matches only commands with a "
            "literal * there")
    if ":*" in body:
        return Reading(rule, False, None, "a prefix pattern read word by word",
                       "a * wildcard with a literal ':' (the :* is not at the end)")
    if "*" not in body:
        return Reading(rule, True, rule)
    words = body.split(" ")
    if words[-1] == "*" and "*" not in " ".join(words[:-1]):
        return Reading(rule, True, rule)  # a trailing ` *`: a prefix to both
    return Reading(rule, False, None,
                   "a * matches within one word; a lone * word spans zero or more words",
                   "a * matches any text, spaces included (more commands than the gateway's)")


def _prefix_rewrite(body: str) -> str | None:
    """`dd of=/dev/*` for `dd of=/dev/*:*`: when the only stars end the last word, Claude
    Code's wildcard (a trailing * matching the rest of the line) means the gateway's prefix."""
    stripped = body.rstrip()
    head, _, last = stripped.rpartition(" ")
    if "*" in head or "*" in last.rstrip("*") or not last.endswith("*"):
        return None
    return stripped.rstrip("*") + "*"


def _example(body: str) -> str:
    try:
        words = shlex.split(body)
    except ValueError:
        words = body.split()
    return " ".join(w.replace("*", "sda") for w in words)


def _path(rule: str, tool: str, content: str) -> Reading:
    if tool in _GONE:
        return Reading(rule, False, None, f"matches {tool} calls (a tool of older versions)",
                       "warns that the rule matches no known tool: it never matches")
    if tool in _EDIT_ONLY or tool == "Glob":
        family = "Read" if tool == "Glob" else "Edit"
        return Reading(rule, False, None, f"matches {tool} calls only",
                       f"never matches: only {family}(path) rules are matched by file checks "
                       f"({family}({content}) would also cover every file-"
                       f"{'reading' if family == 'Read' else 'editing'} tool)")
    if content.startswith("/") and not content.startswith("//"):
        from gateway.policy.paths import compile_path_pattern
        from gateway.policy.sandbox import claude_path

        try:
            rewritten = f"{tool}({claude_path(compile_path_pattern(content))})"
        except ValueError:
            return Reading(rule, True, rule)
        return Reading(rule, False, rewritten, "under the session's project root",
                       "relative to the settings file that holds it (not the project for a "
                       "managed drop-in or --settings)")
    return Reading(rule, True, rule)


@dataclass(frozen=True)
class Difference:
    """A rule that means something else to Claude Code, where it was written."""

    where: str
    reading: Reading

    def __str__(self) -> str:
        r = self.reading
        return (f"{self.where}: note: {r.rule} means something else to Claude Code "
                f"{CLAUDE_CODE_VERSION}: the gateway: {r.gateway}; Claude Code: {r.claude}"
                + (f"; in Claude Code's syntax: {r.mirror}" if r.mirror is not None else
                   "; only the gateway holds it"))


def rule_strings(spec: PolicyFile) -> Iterator[tuple[Loc, str]]:
    """Every Claude Code rule string in a file: its permissions lists and `rule:` forms."""
    for decision in ("deny", "ask", "allow"):
        for index, text, _ in spec.permissions.entries(decision):
            yield ("permissions", decision, index), text
    for index, spec_rule in enumerate(spec.rules):
        if spec_rule.rule is not None:
            yield ("rules", index, "rule"), spec_rule.rule


def differences(files: Sequence[tuple[Source, PolicyFile]]) -> list[Difference]:
    found = []
    for source, spec in files:
        for loc, text in rule_strings(spec):
            reading = read_rule(text)
            if not reading.same:
                found.append(Difference(f"{source.path}:{source.line(loc)}", reading))
    return found
