"""Who owns a session: the tenant (token name) that the gateway saw it with first.

The owner of a session never changes once recorded, so replicas may cache it forever; only
the first sight of a session touches the shared store, and that claim is atomic (first writer
wins). `LocalSessionOwners` shares one directory between replicas on one host;
`RedisSessionOwners` one Redis between replicas anywhere. Owners are kept as long as the store
keeps them (a session can be resumed months later). Stores raise OSError when unavailable.
"""

from __future__ import annotations

import hashlib
import os
import tempfile
from collections import OrderedDict
from pathlib import Path
from typing import Any, Protocol

from gateway.budgets.redis_ledger import (
    DEFAULT_TIMEOUT_S,
    client_options,
    redis_module,
    without_password,
)

MAX_SESSION_ID = 256


class SessionOwners(Protocol):
    location: str

    def claim(self, session_id: str, tenant: str) -> str:
        """The session's owner: `tenant` when nobody had claimed it, else whoever did."""
        ...

    def problem(self) -> str:
        """'' when claims can be recorded, else why not (for readiness)."""
        ...


class LocalSessionOwners:
    """One file per session under a directory (per host: every replica must see the same
    directory). A claim writes a temporary file, then hard-links it into place: the link
    fails when the name exists, so exactly one tenant wins and a reader never sees a half
    written owner."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory
        self.location = str(directory)

    def claim(self, session_id: str, tenant: str) -> str:
        path = self._path(session_id)
        existing = _read_owner(path)
        if existing is not None:
            return existing
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".claim-")
        try:
            os.write(fd, tenant.encode("utf-8"))
            os.close(fd)
            try:
                os.link(tmp, path)
                return tenant
            except FileExistsError:
                owner = _read_owner(path)
                if owner is None:  # removed under us: nobody owns it, so try once more
                    os.link(tmp, path)
                    return tenant
                return owner
        finally:
            os.unlink(tmp)

    def problem(self) -> str:
        try:
            self.directory.mkdir(parents=True, exist_ok=True)
            with tempfile.NamedTemporaryFile(dir=self.directory, prefix=".readyz-"):
                pass
        except OSError as exc:
            return f"session owner store {self.directory} not writable: {exc.strerror or exc}"
        return ""

    def _path(self, session_id: str) -> Path:
        # Hashed: a session id is caller input and must never become a path of its own.
        digest = hashlib.sha256(session_id.encode("utf-8", "surrogatepass")).hexdigest()
        return self.directory / digest[:2] / digest


class RedisSessionOwners:
    """One key per session in Redis (`SET NX`: the first writer wins), for replicas on
    several hosts. Needs the `redis` package (`pip install 'agent-gateway[redis]'`)."""

    PREFIX = "agent-gateway:session-owner:"

    def __init__(self, url: str, *, timeout_s: float = DEFAULT_TIMEOUT_S) -> None:
        self._redis, self._errors, self.location = redis_client(url, timeout_s)

    def claim(self, session_id: str, tenant: str) -> str:
        key = self.PREFIX + session_id
        failure: Exception | None = None
        for _ in range(2):
            # Retried once: a claim that timed out may have been written, and claiming again
            # reads it back (SET NX fails, GET names the owner), so a retry is always safe.
            try:
                if self._redis.set(key, tenant.encode("utf-8"), nx=True):
                    return tenant
                owner = self._redis.get(key)
                if owner is not None:
                    return bytes(owner).decode("utf-8", "replace")
                failure = None  # deleted between the two commands: claim again
            except self._errors as exc:
                failure = exc
        if failure is not None:
            raise OSError(f"redis {self.location}: {failure}")
        raise OSError(f"redis {self.location}: the owner of {session_id!r} keeps changing")

    def problem(self) -> str:
        try:
            self._redis.set(self.PREFIX + ".readyz", b"1", ex=60)
        except self._errors as exc:
            return f"session owner store {self.location} not writable: {exc}"
        return ""


def redis_client(url: str, timeout_s: float) -> tuple[Any, tuple[type[Exception], ...], str]:
    """A Redis client for `url`, the errors it raises, and the URL without its password."""
    redis = redis_module()
    client = redis.Redis.from_url(url, **client_options(timeout_s))
    return client, (redis.RedisError,), without_password(url)


def _read_owner(path: Path) -> str | None:
    try:
        return path.read_bytes().decode("utf-8", "replace")
    except FileNotFoundError:
        return None


class OwnerCache:
    """Owners already known to this replica (they never change), most recent last."""

    def __init__(self, capacity: int = 65536) -> None:
        self._owners: OrderedDict[str, str] = OrderedDict()
        self._capacity = capacity

    def get(self, session_id: str) -> str | None:
        owner = self._owners.get(session_id)
        if owner is not None:
            self._owners.move_to_end(session_id)
        return owner

    def put(self, session_id: str, owner: str) -> None:
        self._owners[session_id] = owner
        self._owners.move_to_end(session_id)
        if len(self._owners) > self._capacity:
            self._owners.popitem(last=False)
