"""What self-protection covers on this host: read from the environment, the interpreter and
Claude Code's user and managed settings when a policy is loaded."""

from __future__ import annotations

import json
import os
import shutil
import site
from collections.abc import Sequence
from pathlib import Path

from gateway.env import audit_key_file, cache_secret_path, gateway_home, tokens_files, variable
from gateway.policy.builtin import Protected
from gateway.policy.paths import expand_home, password_home

_MANAGED = ("/etc/claude-code/managed-settings.json", "/etc/claude-code/managed-settings.d")
_USER_SETTINGS = ("~/.claude/settings.json", "~/.claude/settings.local.json")


def protected_paths(policy_paths: Sequence[str]) -> Protected:
    home = gateway_home()
    secrets = [str(cache_secret_path()), *tokens_files()]
    key = audit_key_file()
    if key:
        secrets.append(str(key))
    user_home = _user_home()
    return Protected(
        gateway_home=str(home),
        policy_files=tuple(_with_real(policy_paths, user_home)),
        secrets=tuple(_with_real(secrets, user_home)),
        code=tuple(dict.fromkeys(_with_real(
            [*_installed_code(), *_hook_commands(user_home)], user_home))),
    )


def _user_home() -> str | None:
    """What `~` stands for in the paths named here: HOME (read by gateway.env), else the
    password database's entry (as os.path.expanduser has it); None when neither is known."""
    home = variable("HOME")
    return home if home is not None else password_home()


def _with_real(paths: Sequence[str], user_home: str | None) -> list[str]:
    out: list[str] = []
    for path in paths:
        absolute = os.path.abspath(expand_home(path, user_home))
        out.append(absolute)
        real = os.path.realpath(absolute)
        if real != absolute:
            out.append(real)
    return out


def _installed_code() -> list[str]:
    import gateway

    code = [str(Path(gateway.__file__).parent)]
    code += [p for p in (*site.getsitepackages(), site.getusersitepackages()) if p]
    script = shutil.which("agent-gateway")
    if script:
        code.append(script)
    return code


def _hook_commands(user_home: str | None) -> list[str]:
    """Executables named by command hooks in the user's and the managed settings."""
    files = [Path(expand_home(p, user_home)) for p in _USER_SETTINGS]
    managed = Path(_MANAGED[1])
    files.append(Path(_MANAGED[0]))
    if managed.is_dir():
        files.extend(sorted(managed.glob("*.json"))[:64])
    found: list[str] = []
    for path in files:
        try:
            data = json.loads(path.read_text(encoding="utf-8")[: 1024 * 1024])
        except (OSError, ValueError):
            continue
        hooks = data.get("hooks") if isinstance(data, dict) else None
        for matchers in hooks.values() if isinstance(hooks, dict) else ():
            for matcher in matchers if isinstance(matchers, list) else ():
                entries = matcher.get("hooks", []) if isinstance(matcher, dict) else []
                for hook in entries if isinstance(entries, list) else ():
                    command = hook.get("command") if isinstance(hook, dict) else None
                    program = str(command).split()[0] if isinstance(command, str) and (
                        command.strip()) else ""
                    resolved = shutil.which(expand_home(program, user_home)) if program else None
                    if resolved:
                        found.append(resolved)
    return found
