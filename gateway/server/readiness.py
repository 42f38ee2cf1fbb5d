"""Whether a `serve` replica is ready (/readyz, the readiness metric): its problems (the
audit log or the archive store cannot take a write) and the warnings shown while it stays
ready."""

from __future__ import annotations

import errno
import os
import tempfile
from collections.abc import Collection
from dataclasses import dataclass, field
from pathlib import Path
from typing import NamedTuple, TypedDict

from gateway.audit.log import checkpoint_path
from gateway.errors import one_line
from gateway.handlers.engine import Engine


class Notice(NamedTuple):
    """A warning, and the policy files it is about (a caller is shown only its own)."""

    text: str
    policies: tuple[str, ...] = ()


@dataclass(frozen=True)
class Readiness:
    """`problems` make the replica not ready; `warnings` are shown while it stays ready.

    /readyz shows both; metrics read the same value."""

    problems: list[str] = field(default_factory=list)
    warnings: list[Notice] = field(default_factory=list)

    @property
    def ready(self) -> bool:
        return not self.problems

    def details(self, policies: Collection[str] | None = None) -> ReadinessBody:
        """The /readyz body; `policies`: only warnings about these files (None: all)."""
        shown = [
            n.text for n in self.warnings
            if policies is None or set(n.policies) <= set(policies)
        ]
        return {"ready": self.ready, "problems": self.problems, "warnings": shown}


class ReadinessBody(TypedDict):
    ready: bool
    problems: list[str]
    warnings: list[str]


def store_problem(engine: Engine) -> str:
    """The local archive directory must be writable (an S3 store is checked when used)."""
    try:
        settings, _ = engine.compaction_settings()
    except Exception as exc:
        return f"compaction settings: {one_line(exc)}"
    if not settings.archive or settings.store != "local":
        return ""
    from gateway.archive.store import local_root

    return _writable_dir(Path(local_root(settings, None)), "archive store")


READINESS_PROBE_BYTES = 64 * 1024
"""Written (and removed) where a store lives by each readiness check: more than an audit
record takes, so a full disk shows before a decision fails on it. An empty file, which is
what the check wrote before, still fits on a full disk."""


def audit_problem(path: Path) -> str:
    """The audit log cannot be appended: its directory cannot take a record (full, read-only,
    not a directory) or the log or its checkpoint cannot be opened for writing."""
    problem = _writable_dir(path.parent, "audit log directory")
    for target, what in ((path, "audit log"), (checkpoint_path(path), "audit checkpoint")):
        if problem:
            break
        try:
            os.close(os.open(target, os.O_WRONLY | os.O_APPEND))
        except FileNotFoundError:
            continue  # written with the first record
        except OSError as exc:
            problem = f"{what} {target} not writable: {exc.strerror or exc}"
    return problem


def _writable_dir(root: Path, what: str) -> str:
    try:
        root.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile(dir=root, prefix=".readyz-", buffering=0) as probe:
            left = memoryview(bytes(READINESS_PROBE_BYTES))
            while left:  # a nearly full disk takes part of it, then refuses the rest
                written = probe.write(left) or 0
                if not written:
                    raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
                left = left[written:]
    except OSError as exc:
        return f"{what} {root} not writable: {exc.strerror or exc}"
    return "" if os.access(root, os.W_OK) else f"{what} {root} not writable"
