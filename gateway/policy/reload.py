"""Hot reload: the shell around load_policy for long-running processes (runner, HTTP hook).

`current()` re-checks the files at most every `interval_s`; a changed file is reloaded, and a
bad edit keeps the last good policy in force and logs the error.
"""

from __future__ import annotations

import logging
import os
import threading
import time
from collections.abc import Callable, Sequence

from gateway.errors import PolicyError
from gateway.policy.compiled import Policy

log = logging.getLogger("gateway.policy")
Signature = tuple[tuple[int, int, int], ...]


def _signature(paths: Sequence[str]) -> Signature:
    sig = []
    for path in paths:
        try:
            st = os.stat(path)
            sig.append((st.st_mtime_ns, st.st_size, st.st_ino))
        except OSError:
            sig.append((-1, -1, -1))
    return tuple(sig)


class PolicyHolder:
    """Holds the policy in force for a set of files. The first load must succeed."""

    def __init__(self, paths: Sequence[str], *, interval_s: float = 0.5,
                 clock: Callable[[], float] = time.monotonic,
                 loader: Callable[[Sequence[str]], Policy] | None = None) -> None:
        if loader is None:
            from gateway.policy.loader import load_policy

            loader = load_policy
        self._paths = tuple(paths)
        self._interval = interval_s
        self._clock = clock
        self._load = loader
        self._lock = threading.Lock()
        self._signature = _signature(self._paths)
        self._policy = loader(self._paths)
        self._checked = clock()
        self.last_error: PolicyError | None = None

    @property
    def paths(self) -> tuple[str, ...]:
        return self._paths

    def current(self) -> Policy:
        now = self._clock()
        if now - self._checked < self._interval:
            return self._policy
        with self._lock:
            self._checked = now
            signature = _signature(self._paths)
            if signature != self._signature:
                self._signature = signature
                self._reload()
        return self._policy

    def _reload(self) -> None:
        try:
            policy = self._load(self._paths)
        except PolicyError as exc:
            self.last_error = exc
            log.error("policy reload failed, keeping the last good policy: %s", exc)
            return
        if policy.bundle_hash != self._policy.bundle_hash:
            log.info("policy reloaded: %s", policy.bundle_hash[:12])
        self._policy = policy
        self.last_error = None
