"""Keep a gateway process's environment and memory from the agent, which runs as the same OS
user: on Linux, a process marked not dumpable (prctl PR_SET_DUMPABLE 0) has its
/proc/<pid>/environ, mem, fd and the like owned by root, and processes of the same user can
neither read them nor attach to it. What `serve` (its tokens, Redis URL and metrics token in
its environment) and `run` (the audit key and the hook token in its memory) hold stays theirs;
the Claude Code they start is dumpable again from its exec, as it must be for the run's hook
endpoint to read its descriptors.

Elsewhere nothing is done (macOS keeps other processes' environments from same-user readers
only partly; docs/run.md). Root, or anything with CAP_SYS_PTRACE, reads everything anyway.
"""

from __future__ import annotations

import ctypes
import sys

PR_SET_DUMPABLE = 4
PR_GET_DUMPABLE = 3


def make_private() -> bool:
    """Mark this process not dumpable; True when done (Linux), False elsewhere or on failure."""
    if not sys.platform.startswith("linux"):
        return False
    return _prctl(PR_SET_DUMPABLE, 0) == 0


def is_private() -> bool:
    return sys.platform.startswith("linux") and _prctl(PR_GET_DUMPABLE, 0) == 0


def _prctl(option: int, value: int) -> int:
    try:
        # The interpreter's own symbols include libc's (find_library would run ldconfig).
        return int(ctypes.CDLL(None).prctl(option, value, 0, 0, 0))
    except (OSError, AttributeError):
        return -1
