"""Hot reload: the shell around compile_bundle for long-running processes (`run`'s hook
endpoint, `serve` and its decision workers). A policy is loaded whole or not at all.

Editors and copies write a file in steps (truncate then write, chunks with pauses), and a file
cut short is often still a valid policy, a weaker one. So a changed file is taken only when:
- it reads the same (bytes and stat) at two checks at least SETTLE_S apart;
- it ends with a newline (a file cut mid-line does not);
- it validates on its own;
- and, when it gives up anything the text in force had (loosening.py: a deny or ask rule
  gone, a looser default, a safeguard off), it has read the same for HOLD_S. That reload is
  then logged as a warning naming what it removed, and `notices()` shows it (on `/readyz`)
  until the file changes again.
Until then the text in force stays in force; a change that fails one of the checks once settled
is a `problem` (logged once, on `/readyz`). Stability is measured from when this process first
saw the bytes, never from the file's mtime (`cp -p` keeps an old one).

`PolicyFiles` holds the accepted text of each file for a process; each `PolicyHolder` compiles
its layer set from those texts. A decision worker starts from the texts its server accepted
(`seed`), never from a file that may be half-written at that instant. Only a file's first
sighting in a process, with nothing to compare it with, is taken as read (and must validate).
"""

from __future__ import annotations

import logging
import os
import threading
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from gateway.errors import PolicyError
from gateway.policy.compiled import Policy
from gateway.policy.loosening import loosenings
from gateway.policy.model import PolicyFile

log = logging.getLogger("gateway.policy.reload")

INTERVAL_S = 0.5
"""Files are checked at most this often (stat; read only when the stat changed)."""
SETTLE_S = 0.5
"""A change must read the same at two checks this far apart."""
HOLD_S = 5.0
"""A change that gives something up must read the same for this long."""
SHOWN = 5
"""Loosenings named in a message; the rest are counted."""

Stat = tuple[int, int, int, int]
"""mtime_ns, ctime_ns, size, inode; all -1 when the file cannot be stat'ed."""
_GONE: Stat = (-1, -1, -1, -1)


def _stat(path: str) -> Stat:
    try:
        st = os.stat(path)
    except OSError:
        return _GONE
    return (st.st_mtime_ns, st.st_ctime_ns, st.st_size, st.st_ino)


def _read(path: str) -> bytes | PolicyError:
    try:
        with open(path, "rb") as handle:
            return handle.read()
    except OSError as exc:
        return PolicyError(f"cannot read policy file: {exc.strerror or exc}", path=path)


def _parse(path: str, data: bytes) -> PolicyFile:
    from gateway.policy.loader import parse_file

    return parse_file(path, data)[1]


@dataclass
class _Text:
    """A file's text in force."""

    data: bytes
    stat: Stat | None
    """None for a seed not yet compared with the file."""
    version: int
    spec: PolicyFile | None = None


@dataclass
class _Change:
    """A file's text that differs from the one in force, waiting to settle."""

    data: bytes | PolicyError
    stat: Stat
    seen: float
    judged: bool = False
    problem: PolicyError | None = None
    spec: PolicyFile | None = None
    gives_up: list[str] = field(default_factory=list)
    held_logged: bool = False


class PolicyFiles:
    """The accepted text of each policy file a process reads, and the changes settling."""

    def __init__(
        self,
        *,
        interval_s: float = INTERVAL_S,
        settle_s: float = SETTLE_S,
        hold_s: float = HOLD_S,
        clock: Callable[[], float] = time.monotonic,
        seed: Mapping[str, bytes] | None = None,
    ) -> None:
        self.interval_s = interval_s
        self.clock = clock
        self._settle = settle_s
        self._hold = hold_s
        self._lock = threading.Lock()
        self._texts: dict[str, _Text] = {
            path: _Text(data, None, 1) for path, data in (seed or {}).items()
        }
        self._changes: dict[str, _Change] = {}
        self._checked: dict[str, float] = {}
        self._removed: dict[str, str] = {}
        """Per file, what its last reload gave up (shown until it changes again)."""

    # --- what holders read ------------------------------------------------------------------
    def texts(self, paths: Sequence[str]) -> list[tuple[str, bytes]]:
        """The texts in force; a file seen here for the first time is read now and must
        validate (PolicyError otherwise; nothing is kept, so the next call reads it again)."""
        if not paths:
            raise PolicyError(
                "no policy file given (use --policy PATH or set AGENT_GATEWAY_POLICY)"
            )
        with self._lock:
            for path in paths:
                if path not in self._texts:
                    self._first_sighting(path)
            return [(path, self._texts[path].data) for path in paths]

    def versions(self, paths: Iterable[str]) -> tuple[int, ...]:
        with self._lock:
            return tuple(self._texts[p].version if p in self._texts else 0 for p in paths)

    def accepted(self) -> dict[str, bytes]:
        """Every text in force: the seed of a new worker process."""
        with self._lock:
            return {path: text.data for path, text in self._texts.items()}

    def problem(self, path: str) -> PolicyError | None:
        """Why the file's settled change is not in force (None when there is none)."""
        with self._lock:
            change = self._changes.get(path)
            return change.problem if change is not None else None

    def problems(self) -> list[PolicyError]:
        with self._lock:
            return [c.problem for c in self._changes.values() if c.problem is not None]

    def notices(self) -> list[tuple[str, str]]:
        """(file, notice): changes held back because they give something up, and reloads
        that did."""
        now = self.clock()
        with self._lock:
            held = [
                (path, f"policy {path} changed and gives up {_listed(c.gives_up)}: held until "
                       f"it reads the same for {self._hold:g} s "
                       f"({max(0.0, self._hold - (now - c.seen)):.1f} s to go); the last policy "
                       "stays in force")
                for path, c in self._changes.items()
                if c.judged and c.problem is None and c.gives_up
            ]
            return held + list(self._removed.items())

    # --- checking the files -----------------------------------------------------------------
    def refresh(self, paths: Iterable[str], *, force: bool = False) -> None:
        """Check each file (at most every interval_s unless `force`): stat, and when it
        changed, read, settle, judge and accept as the module says."""
        now = self.clock()
        with self._lock:
            for path in paths:
                if path not in self._texts:
                    continue  # never sighted: texts() reads it
                if not force and now - self._checked.get(path, -1e18) < self.interval_s:
                    continue
                self._checked[path] = now
                self._check(path, now)

    def _first_sighting(self, path: str) -> None:
        data = _read(path)
        if isinstance(data, PolicyError):
            raise data
        spec = _parse(path, data)
        self._texts[path] = _Text(data, _stat(path), 1, spec)

    def _check(self, path: str, now: float) -> None:
        text = self._texts[path]
        stat = _stat(path)
        change = self._changes.get(path)
        if change is None and stat == text.stat:
            return
        data = _read(path)
        if data == text.data:  # the text in force, touched or written again
            text.stat = stat
            self._changes.pop(path, None)
            return
        if change is None or change.stat != stat or not _same(change.data, data):
            self._changes[path] = _Change(data, stat, now)
            return
        stable = now - change.seen
        if stable < self._settle:
            return
        if not change.judged:
            self._judge(path, text, change)
        if change.problem is not None:
            return
        if change.gives_up and stable < self._hold:
            if not change.held_logged:
                change.held_logged = True
                log.warning(
                    "policy %s changed and gives up %s: holding it until it reads the same "
                    "for %g s (a file cut short while it is written looks like this)",
                    path, _listed(change.gives_up), self._hold,
                )
            return
        self._accept(path, text, change, stat)

    def _judge(self, path: str, text: _Text, change: _Change) -> None:
        change.judged = True
        data = change.data
        if isinstance(data, PolicyError):
            change.problem = data
        elif not data.endswith(b"\n"):
            lines = data.count(b"\n") + 1
            change.problem = PolicyError(
                "does not end with a newline, so it is taken as not completely written yet "
                "(an editor or a copy may still be writing it); not loaded",
                path=path, line=lines,
            )
        else:
            try:
                change.spec = _parse(path, data)
            except PolicyError as exc:
                change.problem = exc
        if change.problem is not None:
            log.error("policy reload failed, keeping the last good policy: %s", change.problem)
            return
        old = text.spec
        if old is None:
            try:
                old = text.spec = _parse(path, text.data)
            except PolicyError:
                old = None  # nothing valid to give up
        if old is not None and change.spec is not None:
            change.gives_up = loosenings(old, change.spec)

    def _accept(self, path: str, text: _Text, change: _Change, stat: Stat) -> None:
        if not isinstance(change.data, bytes):  # judged a problem, never accepted
            return
        self._texts[path] = _Text(change.data, stat, text.version + 1, change.spec)
        del self._changes[path]
        if change.gives_up:
            at = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
            message = (
                f"policy {path} reloaded at {at}, GIVING UP {_listed(change.gives_up)} "
                f"(it read the same for {self._hold:g} s; if that was not meant, restore it)"
            )
            log.warning("%s", message)
            self._removed[path] = message
        else:
            self._removed.pop(path, None)
            log.info("policy %s reloaded", path)


def _same(a: bytes | PolicyError, b: bytes | PolicyError) -> bool:
    if isinstance(a, PolicyError) or isinstance(b, PolicyError):
        return str(a) == str(b) and type(a) is type(b)
    return a == b


def _listed(items: Sequence[str]) -> str:
    shown = "; ".join(items[:SHOWN])
    return shown + (f"; and {len(items) - SHOWN} more" if len(items) > SHOWN else "")


class PolicyHolder:
    """The policy in force for one layer set, compiled from `files`. The first load must
    succeed; after that a change that does not compile keeps the last good policy."""

    def __init__(
        self,
        paths: Sequence[str],
        *,
        files: PolicyFiles | None = None,
        interval_s: float = INTERVAL_S,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._paths = tuple(paths)
        self._files = files or PolicyFiles(interval_s=interval_s, clock=clock)
        self._interval = self._files.interval_s
        self._clock = self._files.clock
        self._lock = threading.Lock()
        # A layer set tried again after a failed first load must see what changed since.
        self._files.refresh(self._paths)
        self._policy = _compile(self._files.texts(self._paths))
        self._versions = self._files.versions(self._paths)
        self._checked = self._clock()
        self._error: PolicyError | None = None

    @property
    def paths(self) -> tuple[str, ...]:
        return self._paths

    @property
    def last_error(self) -> PolicyError | None:
        """Why the files as they are now are not what is in force (None when they are)."""
        if self._error is not None:
            return self._error
        for path in self._paths:
            problem = self._files.problem(path)
            if problem is not None:
                return problem
        return None

    def current(self) -> Policy:
        now = self._clock()
        if now - self._checked < self._interval:
            return self._policy
        with self._lock:
            self._checked = now
            self._files.refresh(self._paths)
            versions = self._files.versions(self._paths)
            if versions != self._versions:
                self._versions = versions
                self._recompile()
        return self._policy

    def _recompile(self) -> None:
        try:
            policy = _compile(self._files.texts(self._paths))
        except PolicyError as exc:
            self._error = exc
            log.error("policy reload failed, keeping the last good policy: %s", exc)
            return
        if policy.bundle_hash != self._policy.bundle_hash:
            log.info("policy reloaded: %s", policy.bundle_hash[:12])
        self._policy = policy
        self._error = None


def _compile(bundle: Sequence[tuple[str, bytes]]) -> Policy:
    from gateway.policy.loader import compile_bundle

    return compile_bundle(bundle)
