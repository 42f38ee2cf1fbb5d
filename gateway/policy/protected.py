"""What self-protection covers on this host: read from the environment, the interpreter and
Claude Code's user and managed settings when a policy is loaded."""

from __future__ import annotations

import json
import os
import shutil
import site
from collections.abc import Sequence
from pathlib import Path

from gateway.env import audit_key_file, cache_secret_path, gateway_home, tokens_files
from gateway.policy.builtin import Protected

_MANAGED = ("/etc/claude-code/managed-settings.json", "/etc/claude-code/managed-settings.d")
_USER_SETTINGS = ("~/.claude/settings.json", "~/.claude/settings.local.json")


def protected_paths(policy_paths: Sequence[str]) -> Protected:
    home = gateway_home()
    secrets = [str(cache_secret_path()), *tokens_files()]
    key = audit_key_file()
    if key:
        secrets.append(str(key))
    return Protected(
        gateway_home=str(home),
        policy_files=tuple(_with_real(policy_paths)),
        secrets=tuple(_with_real(secrets)),
        code=tuple(dict.fromkeys(_with_real([*_installed_code(), *_hook_commands()]))),
    )


def _with_real(paths: Sequence[str]) -> list[str]:
    out: list[str] = []
    for path in paths:
        absolute = os.path.abspath(os.path.expanduser(path))
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


def _hook_commands() -> list[str]:
    """Executables named by command hooks in the user's and the managed settings."""
    files = [Path(p).expanduser() for p in _USER_SETTINGS]
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
                    resolved = shutil.which(os.path.expanduser(program)) if program else None
                    if resolved:
                        found.append(resolved)
    return found
