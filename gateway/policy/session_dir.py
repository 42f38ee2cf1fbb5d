"""The directory a session started in, from what every hook input carries. Pure.

`/`-anchored rules and the built-in protections of a project (`/.claude/settings.json`,
`/.mcp.json`) name files under the project root, not under the directory the agent last
`cd`-ed into: after `cd .github` the next hook input's `cwd` is inside .github. Claude Code
keeps a session's transcript under `~/.claude/projects/<the start directory, each character
not a letter or digit written '-'>/` (longer names: their first 200 characters, '-', a hash),
and the agent cannot change the path it reports. Of `cwd` and its parents, the one that name
encodes is the start directory. A command hook also gets `CLAUDE_PROJECT_DIR`.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping

PROJECT_DIR_ENV = "CLAUDE_PROJECT_DIR"
_NOT_ALNUM = re.compile(r"[^a-zA-Z0-9]")
_LONG = 200


def encoded(directory: str) -> str:
    """A directory as Claude Code names its transcript folder."""
    return _NOT_ALNUM.sub("-", directory)


def session_directory(cwd: str, transcript_path: str, environ: Mapping[str, str]) -> str:
    """The directory the session started in; `cwd` when nothing says otherwise."""
    named = environ.get(PROJECT_DIR_ENV, "")
    if os.path.isabs(named):
        return os.path.normpath(named)
    if not cwd or not transcript_path:
        return cwd
    folder = os.path.basename(os.path.dirname(transcript_path))
    if not folder:
        return cwd
    truncated = ""
    candidate = os.path.normpath(cwd)
    while True:
        name = encoded(candidate)
        if name == folder:
            return candidate
        if len(name) > _LONG and folder.startswith(name[:_LONG] + "-"):
            truncated = candidate  # the shallowest of these: its hash is not checked
        parent = os.path.dirname(candidate)
        if parent == candidate:
            return truncated or cwd
        candidate = parent
