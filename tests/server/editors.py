"""Writers that put a new policy file in place the way editors and copies do, recording every
state the file passes through (what a reader could have seen between two system calls)."""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from pathlib import Path

States = list[bytes | None]
"""The file's successive contents (None: no file at that path)."""
Writer = Callable[[Path, bytes, States], None]


def cut_then_finish(path: Path, new: bytes, states: States, *, at: int = 400,
                    pause: float = 3.0) -> None:
    """The report: the file cut to its first `at` bytes for `pause` seconds, then written."""
    os.truncate(path, at)
    states.append(path.read_bytes())
    time.sleep(pause)
    with path.open("r+b") as handle:
        handle.write(new)
        handle.truncate()
    states.append(new)


def truncate_then_write_slowly(path: Path, new: bytes, states: States, *, chunk: int = 48,
                               pause: float = 0.1) -> None:
    """`cp`, `cat > file`, an editor writing in place: empty first, then chunk by chunk."""
    with path.open("wb") as handle:
        states.append(b"")
        for at in range(0, len(new), chunk):
            handle.write(new[at:at + chunk])
            handle.flush()
            states.append(new[:at + chunk])
            time.sleep(pause)


def in_line_chunks(path: Path, new: bytes, states: States, *, lines: int = 5,
                   pause: float = 0.8) -> None:
    """In place, a few whole lines at a time with pauses longer than the settle interval:
    every state ends with a newline, and many of them validate."""
    rows = new.splitlines(keepends=True)
    with path.open("wb") as handle:
        states.append(b"")
        for at in range(0, len(rows), lines):
            handle.write(b"".join(rows[at:at + lines]))
            handle.flush()
            states.append(b"".join(rows[:at + lines]))
            time.sleep(pause)


def atomic_rename(path: Path, new: bytes, states: States) -> None:
    """Write a temporary file beside it, then rename it over (most tools' safe save)."""
    temporary = path.with_name(f".{path.name}.tmp")
    temporary.write_bytes(new)
    os.replace(temporary, path)
    states.append(new)


def vim_backup_then_write(path: Path, new: bytes, states: States, *,
                          pause: float = 0.2) -> None:
    """vim's default save: the original renamed to a backup, a new file written, the backup
    removed. For a moment there is no file, then an empty one, then half of it."""
    backup = path.with_name(path.name + "~")
    os.rename(path, backup)
    states.append(None)
    time.sleep(pause)
    with path.open("wb") as handle:
        states.append(b"")
        half = len(new) // 2
        handle.write(new[:half])
        handle.flush()
        states.append(new[:half])
        time.sleep(pause)
        handle.write(new[half:])
    states.append(new)
    backup.unlink()
