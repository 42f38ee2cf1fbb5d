"""A file written ahead of a program on PATH: later commands that name the program run the file.

`git status` is what the hook sees; with `~/.local/bin/git` written first (a script that
prints `.env`), that is what bash runs. A write into a PATH directory under a name a later
directory of PATH already holds is denied, by Bash and the file tools alike; a new name (a
tool installed for the first time) is not. Reads the disk: whether the later program exists.
"""

from __future__ import annotations

import os
from collections.abc import Iterable

from gateway.policy.paths import decision_variable, expand_user
from gateway.policy.shell.scanned import Scan
from gateway.types import ToolCall

RULE = "builtin:path-shadowing"
FILE_TOOLS = {"Write": "file_path", "Edit": "file_path", "MultiEdit": "file_path",
              "NotebookEdit": "notebook_path"}


def shadowing_write(call: ToolCall, bash: Scan | None) -> str:
    """Why the call writes a program ahead of another of the same name on PATH ('' when it
    does not)."""
    search = [os.path.normpath(d) for d in (decision_variable("PATH") or "").split(":")
              if d.startswith("/")]
    if not search:
        return ""
    for path in _written(call, bash):
        directory, name = os.path.split(path)
        if directory not in search or not name:
            continue
        for later in search[search.index(directory) + 1:]:
            found = os.path.join(later, name)
            if os.path.isfile(found) and os.access(found, os.X_OK):
                return (f"it writes {path}, ahead of {found} on PATH: later commands that "
                        f"run {name} would run what it writes")
    return ""


def _written(call: ToolCall, bash: Scan | None) -> Iterable[str]:
    if bash is None:
        key = FILE_TOOLS.get(call.tool_name)
        value = call.tool_input.get(key) if key else None
        if isinstance(value, str) and value:
            yield _absolute(value, call.cwd or "/")
        return
    for access in bash.accesses:
        if access.mode != "write" or access.possible or access.path.dynamic:
            continue
        for cwd in bash.cwds or (call.cwd or "/",):
            yield _absolute(access.path.text, cwd)


def _absolute(path: str, cwd: str) -> str:
    return os.path.normpath(os.path.join(cwd, expand_user(path)))
