"""Which tenant may touch a session: the one that owns it.

A session belongs to the tenant (token name) the gateway saw it with first: a remote run's
init message, a SessionStart or any other hook, a proxied model request. Every later request
naming the session from another tenant is refused. Owners are recorded in a store the
replicas share; each replica caches what it has learnt (an owner never changes).
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from typing import Any, TypeGuard

from gateway.server.owners import MAX_SESSION_ID, OwnerCache, SessionOwners

log = logging.getLogger("gateway.server.tenancy")

Offloader = Callable[..., Awaitable[Any]]


class OwnerStoreError(Exception):
    """The owner store cannot be read or written: nothing about the session can be allowed."""


class Tenancy:
    def __init__(self, owners: SessionOwners | None, offload: Offloader) -> None:
        self.owners = owners
        self._offload = offload
        self._cache = OwnerCache()

    @property
    def enabled(self) -> bool:
        return self.owners is not None

    async def refusal(self, session_id: str, tenant: str) -> str:
        """'' when `tenant` may act on the session (recording it as the owner on first
        sight), else the reason it may not. Raises OwnerStoreError when that is unknowable."""
        if self.owners is None or not session_id:
            return ""
        owner = self._cache.get(session_id)
        if owner is None:
            try:
                owner = str(await self._offload(self.owners.claim, session_id, tenant))
            except OSError as exc:
                log.error("session owner store %s failed: %s", self.owners.location, exc)
                raise OwnerStoreError(
                    f"the session owner store is unavailable: {exc.strerror or exc}"
                ) from None
            self._cache.put(session_id, owner)
        if owner == tenant:
            return ""
        log.warning("refused: tenant %s acted on session %s of another tenant", tenant, session_id)
        return f"session {session_id} belongs to another tenant"


def valid_session_id(value: object) -> TypeGuard[str]:
    return isinstance(value, str) and 0 < len(value) <= MAX_SESSION_ID and value.isprintable()
