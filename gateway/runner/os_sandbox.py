"""Claude Code's OS sandbox for a run the gateway starts, when its policy says
`sandbox: required`: whether it can start on this host, and the settings that turn it on.

Claude Code 2.1.332 with `failIfUnavailable` refuses to start at all where the sandbox cannot
(measured: "sandbox required but unavailable: ... bubblewrap (bwrap) not installed, socat not
installed", exit 1). A run that cannot have it still runs, so that a first hour on a machine
without bubblewrap works: Claude Code starts without the sandbox, every Bash call is denied
(the policy's `builtin:sandbox-required` rule, recorded like any decision) and one line says
what is missing and how to install it.
"""

from __future__ import annotations

import dataclasses
import os
import shutil
import subprocess
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from gateway.policy.compiled import Policy
from gateway.policy.sandbox import compile_sandbox
from gateway.policy.withheld_env import withheld_names
from gateway.runner.hard_links import linked_names

PROBE_TIMEOUT_S = 5.0


@dataclass(frozen=True)
class RunSandbox:
    """What a run passes to Claude Code and tells its hook answers."""

    settings: Mapping[str, Any]
    """Settings to merge into the run's `--settings` ({} when there is no sandbox)."""
    fingerprint: str = ""
    """The policy's sandbox fingerprint when its sandbox is on ('' otherwise)."""
    unavailable: str = ""
    """Why the sandbox the policy requires cannot start here ('' when it can)."""
    unrelaxed: str = ""
    """Why the hook decides as without a sandbox although it is on ('' it need not)."""


def run_sandbox(policy: Policy | None, env: Mapping[str, str], cwd: str = "") -> RunSandbox:
    """The sandbox for a run of `policy` whose Claude Code gets environment `env` and starts
    in `cwd` (default: this process's). Hard links to denied files found there are masked
    too; where they cannot all be found, the sandbox still runs but the hook leaves nothing
    to it (a computed path could name an unmasked link)."""
    if policy is None or policy.sandbox != "required":
        return RunSandbox({})
    missing = unavailable(env)
    if missing:
        return RunSandbox({}, unavailable=missing)
    # `~` in the compiled paths is Claude Code's home: the gateway's own paths are written
    # under `~` only when both are the same directory.
    own_home = os.path.expanduser("~")
    home = own_home if env.get("HOME", own_home) == own_home else ""
    config = compile_sandbox(policy.layers, home, withheld_names(policy.withheld_env, env))
    links = linked_names(policy, os.path.abspath(cwd or os.getcwd()))
    if links.incomplete:
        return RunSandbox(config.settings(), unrelaxed=links.incomplete)
    masked = dataclasses.replace(config, deny_read=(*config.deny_read, *links.names))
    return RunSandbox(masked.settings(), policy.sandbox_fingerprint)


def unavailable(env: Mapping[str, str]) -> str:
    """'' when Claude Code's sandbox can start with this environment; else why not, with
    what to install."""
    if sys.platform == "darwin":
        return "" if shutil.which("sandbox-exec") else "sandbox-exec is missing"
    if not sys.platform.startswith("linux"):
        return f"Claude Code's sandbox runs on Linux, macOS and WSL2, not {sys.platform}"
    path = env.get("PATH", os.environ.get("PATH", ""))
    absent = [name for name in ("bwrap", "socat") if shutil.which(name, path=path) is None]
    if absent:
        names = " and ".join({"bwrap": "bubblewrap (bwrap)"}.get(n, n) for n in absent)
        return (f"{names} not installed (Debian/Ubuntu: apt-get install bubblewrap socat; "
                "Fedora: dnf install bubblewrap socat)")
    return _probe(shutil.which("bwrap", path=path) or "bwrap")


def _probe(bwrap: str) -> str:
    """bubblewrap may be installed where it cannot work (a container without user
    namespaces): try the kind of namespace the sandbox makes."""
    try:
        done = subprocess.run(
            [bwrap, "--ro-bind", "/", "/", "--dev", "/dev", "--unshare-net", "--", "true"],
            capture_output=True, text=True, timeout=PROBE_TIMEOUT_S, check=False,
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"bubblewrap does not run: {exc}"
    if done.returncode != 0:
        why = (done.stderr.strip().splitlines() or [f"exit status {done.returncode}"])[0]
        return (f"bubblewrap cannot create a sandbox here ({why}); in a container, see "
                "docs/sandbox.md")
    return ""
