"""Which files of a session are archived, and up to which byte.

Only regular files whose real path lies under the Claude projects root are read; anything
else (a path outside it, a symlink leading out, a FIFO) is refused and logged.
"""

from __future__ import annotations

import logging
import os
import stat
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

from gateway.errors import ArchiveError

log = logging.getLogger("gateway.archive")

SESSION_DIRS = ("subagents", "tool-results")
POLL_S = 0.05
QUIET_S = 0.2
"""A transcript untouched for this long is taken as settled without polling."""


@dataclass(frozen=True, slots=True)
class SessionFile:
    role: str
    real_path: Path
    rel_path: str
    """Relative to the project directory: `<sid>.jsonl`, `<sid>/subagents/...`."""


def confine(path: Path, root: Path) -> Path:
    """The real path of `path`, refused unless it is a regular file under `root`."""
    real_root = Path(os.path.realpath(root))
    real = Path(os.path.realpath(path))
    if not real.is_relative_to(real_root):
        why = "a symlink leading out of" if os.path.islink(path) else "outside"
        msg = f"refused to archive {path}: {why} the Claude projects root {real_root}"
        log.error(msg)
        raise ArchiveError(msg)
    try:
        mode = real.stat().st_mode
    except OSError as exc:
        raise ArchiveError(f"cannot archive {path}: {exc.strerror or exc}") from exc
    if not stat.S_ISREG(mode):
        msg = f"refused to archive {path}: not a regular file"
        log.error(msg)
        raise ArchiveError(msg)
    return real


def open_confined(real: Path) -> BinaryIO:
    """Open a path `confine` returned; O_NOFOLLOW refuses a symlink swapped in since."""
    try:
        fd = os.open(real, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError as exc:
        raise ArchiveError(f"cannot open {real}: {exc.strerror or exc}") from exc
    return os.fdopen(fd, "rb")


def settle(
    path: Path,
    timeout_s: float,
    *,
    clock: Callable[[], float] = time.monotonic,
    sleep: Callable[[float], None] = time.sleep,
    wall: Callable[[], float] = time.time,
) -> int:
    """The transcript's size once it stops growing, waiting at most `timeout_s`.

    Claude Code appends to the transcript asynchronously, so the hook can fire before the last
    lines land. Settled means unchanged for QUIET_S: by its mtime, or as seen by our polls.
    """
    deadline = clock() + timeout_s
    st = path.stat()
    size, changed_at = st.st_size, clock()
    if timeout_s <= 0 or wall() - st.st_mtime >= QUIET_S:
        return size
    while clock() < deadline:
        sleep(min(POLL_S, max(0.0, deadline - clock())))
        st = path.stat()
        if st.st_size != size:
            size, changed_at = st.st_size, clock()
        elif clock() - changed_at >= QUIET_S or wall() - st.st_mtime >= QUIET_S:
            return size
    log.warning(
        "transcript %s still growing after %.1fs; archiving %d bytes", path, timeout_s, size
    )
    return size


def session_files(transcript: Path, root: Path) -> list[SessionFile]:
    """The transcript and every file under its session's subagents/ and tool-results/."""
    real = confine(transcript, root)
    project_dir = Path(transcript).parent
    found = [SessionFile("transcript", real, Path(transcript).name)]
    session_dir = project_dir / Path(transcript).stem
    for role in SESSION_DIRS:
        top = session_dir / role
        if os.path.islink(top):
            confine_dir(top, root)
        if not top.is_dir():
            continue
        for dirpath, dirnames, filenames in os.walk(top):
            dirnames.sort()
            for name in dirnames:
                if os.path.islink(os.path.join(dirpath, name)):
                    confine_dir(Path(dirpath, name), root)  # not followed, but never out
            for name in sorted(filenames):
                path = Path(dirpath, name)
                rel = path.relative_to(project_dir).as_posix()
                found.append(SessionFile(role, confine(path, root), rel))
    return found


def confine_dir(path: Path, root: Path) -> None:
    real_root = os.path.realpath(root)
    if not Path(os.path.realpath(path)).is_relative_to(real_root):
        msg = (
            f"refused to archive {path}: a symlink leading out of "
            f"the Claude projects root {real_root}"
        )
        log.error(msg)
        raise ArchiveError(msg)
