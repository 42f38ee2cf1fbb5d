"""Which files of a session are archived, and up to which byte.

Only the requesting session's own files are read: its transcript, named `<session_id>.jsonl`
as Claude Code names it, and the files under its `<session_id>/` directory. Each must be a
regular file with one link whose real path lies under the Claude projects root (side files:
under the session's own directory). Anything else (a path outside the root, a symlink leading
out, another session's transcript, a hard link to a file elsewhere, a FIFO) is refused and
logged.
"""

from __future__ import annotations

import logging
import os
import stat
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO, NoReturn

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


def confine(path: Path, root: Path, what: str = "the Claude projects root") -> Path:
    """The real path of `path`, refused unless it is a regular file with a single link
    under `root`. A second link means the same bytes live under another name, possibly
    outside the root, which the real path cannot show."""
    real_root = Path(os.path.realpath(root))
    real = Path(os.path.realpath(path))
    if not real.is_relative_to(real_root):
        why = "a symlink leading out of" if os.path.islink(path) else "outside"
        _refuse(f"refused to archive {path}: {why} {what} {real_root}")
    try:
        st = real.stat()
    except OSError as exc:
        raise ArchiveError(f"cannot archive {path}: {exc.strerror or exc}") from exc
    if not stat.S_ISREG(st.st_mode):
        _refuse(f"refused to archive {path}: not a regular file")
    if st.st_nlink > 1:
        _refuse(f"refused to archive {path}: it has {st.st_nlink} hard links")
    return real


def check_transcript_name(transcript: Path, session_id: str) -> None:
    """The transcript must be the session's own: `<session_id>.jsonl`, as Claude Code names
    it, both as given and once symlinks are resolved."""
    expected = f"{session_id}.jsonl"
    safe = session_id not in ("", ".", "..") and "/" not in session_id and "\0" not in session_id
    real_name = Path(os.path.realpath(transcript)).name
    if not safe or transcript.name != expected or real_name != expected:
        _refuse(
            f"refused to archive {transcript}: not the transcript of session {session_id!r} "
            f"(expected {expected!r})"
        )


def _refuse(message: str) -> NoReturn:
    log.error(message)
    raise ArchiveError(message)


def open_confined(real: Path) -> BinaryIO:
    """Open a path `confine` returned; O_NOFOLLOW refuses a symlink swapped in since."""
    try:
        fd = os.open(real, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError as exc:
        raise ArchiveError(f"cannot open {real}: {exc.strerror or exc}") from exc
    return os.fdopen(fd, "rb")


def session_transcripts(
    transcript: Path, root: Path, session_id: str, max_bytes: int
) -> Iterator[BinaryIO]:
    """The session's transcript and its subagents' (JSONL), each opened confined to `root`
    as the archive reads them; one over `max_bytes` is skipped, and the log says so."""
    for file in session_files(transcript, root, session_id):
        if file.role not in ("transcript", "subagents") or not file.rel_path.endswith(".jsonl"):
            continue
        with open_confined(file.real_path) as handle:
            if os.fstat(handle.fileno()).st_size > max_bytes:
                log.error("%s is over %d bytes: not read", file.real_path, max_bytes)
                continue
            yield handle


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


def session_files(
    transcript: Path, root: Path, session_id: str | None = None
) -> list[SessionFile]:
    """The transcript and every file under its session's subagents/ and tool-results/.

    With `session_id`, the transcript must be that session's own (check_transcript_name)."""
    real = confine(transcript, root)
    if session_id is not None:
        check_transcript_name(Path(transcript), session_id)
    project_dir = Path(transcript).parent
    found = [SessionFile("transcript", real, Path(transcript).name)]
    session_dir = project_dir / Path(transcript).stem
    if os.path.islink(session_dir):
        confine_dir(session_dir, root)
    own_dir = Path(os.path.realpath(session_dir))
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
                confine(path, root)  # names the projects root when a file leads out of it
                found.append(SessionFile(role, confine(path, own_dir, "the session's directory"),
                                         rel))
    return found


def confine_dir(path: Path, root: Path) -> None:
    real_root = os.path.realpath(root)
    if not Path(os.path.realpath(path)).is_relative_to(real_root):
        _refuse(
            f"refused to archive {path}: a symlink leading out of "
            f"the Claude projects root {real_root}"
        )
