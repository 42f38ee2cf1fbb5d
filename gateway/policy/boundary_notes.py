"""What `policy check` says about where each rule holds (docs/sandbox.md's table). Pure.

Two kinds of rule are not what they may look like against a hostile agent:
- a floating `Read` deny (`**/.env`, `*.pem`) is held by the sandbox under the
  session's directory only: elsewhere on disk the hook holds the paths it can read;
- a Bash command rule is a guard against mistakes: code planted in a Makefile, a test or an
  npm script and run by an allowed runner in a later call is beyond every layer.
"""

from __future__ import annotations

from collections.abc import Sequence

from gateway.policy.model import PolicyFile
from gateway.policy.parity import rule_strings
from gateway.policy.yamlsrc import Source

COMMAND_RULES_NOTE = (
    "{n} Bash command rule(s) are guards against mistakes, not a boundary: code written into "
    "a Makefile, a test or an npm script and run by an allowed runner (make, pytest, npm "
    "test) in a later call runs unseen; what must hold against a hostile agent is a file, "
    "network or environment rule (docs/sandbox.md)")


def boundary_notes(files: Sequence[tuple[Source, PolicyFile]], sandboxed: bool
                   ) -> tuple[list[str], int]:
    """Notes (file:line) for floating Read denies, and the number of Bash command rules."""
    notes: list[str] = []
    commands = 0
    for source, spec in files:
        for loc, text in rule_strings(spec):
            if loc[:2] != ("permissions", "deny") and loc[0] != "rules":
                continue
            tool, _, content = text.partition("(")
            content = content.removesuffix(")")
            if tool == "Bash" and content:
                commands += 1
            elif (sandboxed and tool == "Read" and content
                  and not content.startswith(("/", "~", "./"))
                  and (content.startswith("**/") or "/" not in content.rstrip("/"))):
                notes.append(
                    f"{source.path}:{source.line(loc)}: note: {text} is held by the OS "
                    "sandbox under the session's directory only; elsewhere the hook holds "
                    "the paths it can read (a path computed to its last component is held "
                    "by neither): anchor rules for secrets outside projects (~/..., //...)")
    return notes, commands
