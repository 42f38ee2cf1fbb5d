"""A small real filesystem for fault tests: a tmpfs of a given size, mounted for the test.

Mounting needs root (CI runs as root in a VM); elsewhere the tests that need one skip, saying
why. A full disk and a read-only one are then real: the kernel refuses the writes."""

from __future__ import annotations

import contextlib
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest


@contextlib.contextmanager
def small_tmpfs(path: Path, size: str = "1m") -> Iterator[Path]:
    path.mkdir(parents=True, exist_ok=True)
    mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size},mode=700", "tmpfs",
                              str(path)], capture_output=True, text=True, check=False)
    if mounted.returncode != 0:
        pytest.skip(f"cannot mount a {size} tmpfs for a real full disk (needs root): "
                    f"{mounted.stderr.strip() or mounted.returncode}")
    try:
        yield path
    finally:
        subprocess.run(["umount", "-l", str(path)], check=False)


def fill(directory: Path) -> Path:
    """Write a file in `directory` until its filesystem is full; returns the file."""
    filler = directory / "filler"
    chunk = bytes(64 * 1024)
    with filler.open("wb", buffering=0) as handle:
        try:
            while True:
                handle.write(chunk)
        except OSError:
            pass
    with contextlib.suppress(OSError), filler.open("ab", buffering=0) as handle:
        while True:
            handle.write(b"\0")  # the last bytes of the last page
    return filler


def remount(path: Path, mode: str) -> None:
    """`ro` or `rw`."""
    subprocess.run(["mount", "-o", f"remount,{mode}", str(path)], check=True,
                   capture_output=True)
