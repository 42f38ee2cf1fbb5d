"""Self-protection: built-in deny rules that keep the governed agent from switching its
governor off. Pure: the paths come in as a `Protected` value (see `protected.py`).

Their paths match in any case: on a case-insensitive filesystem (macOS's default)
`.CLAUDE/settings.json` is `.claude/settings.json`. The layer is evaluated with the policy's
own layers; like any deny it cannot be lifted by a lower file's allow. Only the org file may
turn it off (`self_protection: false`), and every audit record then says so.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, replace
from typing import Literal

from gateway.policy.compiled import BUILTIN_LAYER, Layer, PathRule, Rule, index_layer
from gateway.policy.credential_stores import CREDENTIAL_STORES, RULE_PREFIX
from gateway.policy.rulestring import EDIT_TOOLS, READ_TOOLS

CLAUDE_SETTINGS = (
    "~/.claude/settings.json", "~/.claude/settings.local.json", "~/.claude/hooks/**",
    "/.claude/settings.json", "/.claude/settings.local.json", "/.claude/hooks/**",
    "//etc/claude-code/**", "//Library/Application Support/ClaudeCode/**",
)
"""User, project (relative to the session root) and managed settings, and hook scripts."""
SESSION_STARTUP = (
    "~/.bashrc", "~/.bash_profile", "~/.bash_login", "~/.bash_logout", "~/.profile",
    "~/.zshrc", "~/.zshenv", "~/.zprofile", "~/.zlogin",
    "~/.claude.json", "/.mcp.json",
)
"""What later shells and sessions run: shell start-up files (every login or interactive
shell, a hook's `bash -lc`), Claude Code's user state (its MCP servers, per project) and the
project's MCP server list, started by the next session."""
SSH_ACCESS = (
    "~/.ssh/config", "~/.ssh/rc", "~/.ssh/environment", "~/.ssh/authorized_keys",
    "~/.ssh/authorized_keys2",
)
"""ssh's per-user files that run programs in later connections (ProxyCommand, Match exec,
`rc` at each login) or let someone log in. ssh writes none of them (known_hosts is apart)."""
GIT_CODE = (
    "**/.git/hooks/*", "**/.git/modules/**/hooks/*", "**/.git/config",
    "**/.git/modules/**/config", "**/.git/config.worktree",
    "**/.git/worktrees/*/config.worktree",
    "~/**/.git/hooks/*", "~/**/.git/config", "~/.gitconfig", "~/.config/git/config",
)
"""What git runs on its own: hooks, and configuration naming programs (core.fsmonitor runs
at every `git status`, Claude Code's own at session start included). git's writes to its
configuration are checked key by key (`git config core.pager ...`); any other program's write
there is denied. Not compiled into the sandbox: the kernel cannot tell git's own writes to
.git/config (`git remote add`, `git push -u`) from another program's."""
UNSEARCHED = ("builtin:gateway-state", RULE_PREFIX)
"""Built-in read denies whose files are not searched for other names (hard links): the
gateway's home and most credential stores sit in the home directory, whose walk would cost
every decision its budget."""
HOOK_ONLY = frozenset({"builtin:git-code"})
"""Built-in rules the hook enforces and the sandbox does not hold."""
NAMED_ONLY = frozenset({"builtin:git-code"})
"""Built-in rules held against the files a command names, not against paths known only when
it runs: every repository has .git/hooks, and a patch, archive or `git checkout .` that
cannot be read here would be refused in all of them."""


@dataclass(frozen=True)
class Protected:
    """The gateway's own files on this host, as absolute paths."""

    gateway_home: str
    policy_files: tuple[str, ...] = ()
    secrets: tuple[str, ...] = ()
    """Neither read nor written: the audit key, token files, the cache key."""
    code: tuple[str, ...] = ()
    """Not written: the gateway's installed code, site-packages (a .pth file runs at every
    interpreter start), its executables and the hook commands named in settings."""


@dataclass(frozen=True)
class BuiltinRule:
    id: str
    tools: tuple[str, ...]
    patterns: tuple[str, ...]
    reason: str


def builtin_rules(protected: Protected, lifted: frozenset[str] = frozenset()
                  ) -> list[BuiltinRule]:
    """`lifted`: credential-store rule ids the org file lifted."""
    home = _absolute(protected.gateway_home)
    rules = [
        BuiltinRule("builtin:gateway-state", (*READ_TOOLS, *EDIT_TOOLS), (home, f"{home}/**"),
                    "agent-gateway's own state (audit log, archives, spans, cache) is neither "
                    "readable nor writable by the agent it governs"),
        BuiltinRule("builtin:policy-files", EDIT_TOOLS,
                    tuple(_absolute(p) for p in protected.policy_files),
                    "the policy files in force are not writable by the agent they govern"),
        BuiltinRule("builtin:secrets", (*READ_TOOLS, *EDIT_TOOLS),
                    tuple(_absolute(p) for p in protected.secrets),
                    "agent-gateway's keys and tokens are not readable by the agent"),
        BuiltinRule("builtin:claude-settings", EDIT_TOOLS, CLAUDE_SETTINGS,
                    "Claude Code's settings and hooks wire the gateway in; the agent may not "
                    "change them"),
        BuiltinRule("builtin:session-startup", EDIT_TOOLS, SESSION_STARTUP,
                    "shell start-up files and Claude Code's MCP server lists run code in later "
                    "shells and sessions; the agent may not change them"),
        BuiltinRule("builtin:ssh-access", EDIT_TOOLS, SSH_ACCESS,
                    "ssh's configuration runs programs in later ssh and git connections and "
                    "authorized keys let others log in; the agent may not change them"),
        BuiltinRule("builtin:git-code", EDIT_TOOLS, GIT_CODE,
                    "git hooks and git configuration run code in later git commands, the "
                    "user's and Claude Code's own included; the agent may not change them "
                    "except through `git config`, whose code the policy checks"),
        BuiltinRule("builtin:gateway-code", EDIT_TOOLS,
                    tuple(p for path in protected.code for p in (_absolute(path),
                                                                 _absolute(path) + "/**")),
                    "the gateway's code and the commands Claude Code runs as hooks are not "
                    "writable by the agent"),
    ]
    rules += [BuiltinRule(RULE_PREFIX + name, (*READ_TOOLS, *EDIT_TOOLS), paths,
                          f"{name} keeps credentials there; the agent may neither read nor "
                          "write them (the org policy may lift this rule by name)")
              for name, paths in CREDENTIAL_STORES.items() if RULE_PREFIX + name not in lifted]
    return [rule for rule in rules if rule.patterns]


def builtin_layer(protected: Protected, lifted: frozenset[str] = frozenset(),
                  unparseable: Literal["deny", "ask"] = "deny", monitored: bool = False
                  ) -> Layer:
    """Compiled deny rules; imports the path-pattern compiler (pathspec) on first use.
    `unparseable`: the policy's answer for a Bash command the hook cannot fully read, which
    may touch what these rules guard."""
    from gateway.policy.paths import compile_path_pattern

    rules: list[Rule] = []
    for spec in builtin_rules(protected, lifted):
        for pattern in dict.fromkeys(spec.patterns):
            text = f"Edit({pattern})" if spec.tools == EDIT_TOOLS else f"Read/Edit({pattern})"
            rules.append(Rule(spec.id, "deny", False, f"{spec.reason} [{pattern}]",
                              spec.tools, None,
                              PathRule(compile_path_pattern(pattern, fold_case=True)), text))
    layer = index_layer(BUILTIN_LAYER, "(built in)", "enforce", "abstain", unparseable, rules)
    return replace(layer, unparseable_monitored=monitored) if monitored else layer


def _absolute(path: str) -> str:
    """`//abs/path` in rule syntax, with glob characters escaped (`path` is absolute:
    protected.py expanded it)."""
    normalized = os.path.normpath(path)
    escaped = "".join("\\" + c if c in "*?[]\\" else c for c in normalized)
    return "//" + escaped.lstrip("/")
