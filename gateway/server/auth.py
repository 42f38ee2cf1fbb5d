"""Bearer-token authentication: one token, or a file mapping tokens to policy layers."""

from __future__ import annotations

import hmac
import os
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from pathlib import Path

import yaml
from aiohttp import web
from aiohttp.typedefs import Middleware

from gateway.errors import ConfigError

OPEN_PATHS = frozenset({"/healthz", "/readyz"})
TOKEN_HEADER = "X-Agent-Gateway-Token"
"""The gateway token where `Authorization` carries the upstream's credential (the proxy):
Claude Code sends it with ANTHROPIC_CUSTOM_HEADERS="X-Agent-Gateway-Token: TOKEN"."""


@dataclass(frozen=True)
class Caller:
    """Who is calling, and which policy layers (beyond the server's own) apply to them."""

    name: str
    extra_policies: tuple[str, ...] = ()


_REQUEST_CALLER: web.RequestKey[Caller] = web.RequestKey("agent_gateway.caller", Caller)
_GATEWAY_AUTHORIZATION: web.RequestKey[bool] = web.RequestKey("agent_gateway.authz", bool)


@dataclass(frozen=True)
class TokenTable:
    """Tokens mapped to callers; empty means authentication is off (loopback only)."""

    callers: Mapping[str, Caller]

    @property
    def enabled(self) -> bool:
        return bool(self.callers)

    def lookup(self, token: str) -> Caller | None:
        # Compare against every token in constant time so timing reveals nothing.
        found = None
        for known, caller in self.callers.items():
            if hmac.compare_digest(known.encode(), token.encode()):
                found = caller
        return found


def load_tokens(token: str | None, tokens_file: str | None) -> TokenTable:
    """AGENT_GATEWAY_TOKEN (one caller, server policies only) and/or a tokens file:

    ```yaml
    tokens:
      - token: "..."            # or token_env: TEAM_A_TOKEN
        name: team-a
        policies: [policies/team-a.yaml]
    ```
    """
    callers: dict[str, Caller] = {}
    if token:
        callers[token] = Caller(name="default")
    if tokens_file:
        callers.update(_read_tokens_file(Path(tokens_file)))
    return TokenTable(callers)


def _read_tokens_file(path: Path) -> dict[str, Caller]:
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    except (OSError, yaml.YAMLError) as exc:
        raise ConfigError(f"{path}: {' '.join(str(exc).split())}") from None
    entries = data.get("tokens") if isinstance(data, dict) else None
    if not isinstance(entries, list):
        raise ConfigError(f"{path}: expected a 'tokens:' list")
    callers: dict[str, Caller] = {}
    for n, entry in enumerate(entries):
        if not isinstance(entry, dict):
            raise ConfigError(f"{path}: tokens[{n}] must be a mapping")
        secret = entry.get("token") or os.environ.get(str(entry.get("token_env", "")), "")
        if not secret:
            raise ConfigError(f"{path}: tokens[{n}] has no token (or its token_env is unset)")
        policies = entry.get("policies") or []
        if not isinstance(policies, list) or not all(isinstance(p, str) for p in policies):
            raise ConfigError(f"{path}: tokens[{n}].policies must be a list of paths")
        base = path.parent
        resolved = tuple(str(p if Path(p).is_absolute() else base / p) for p in policies)
        callers[str(secret)] = Caller(
            name=str(entry.get("name") or f"token-{n}"), extra_policies=resolved
        )
    return callers


Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


def auth_middleware(table: TokenTable) -> Middleware:
    @web.middleware
    async def middleware(request: web.Request, handler: Handler) -> web.StreamResponse:
        if table.enabled and request.path not in OPEN_PATHS:
            caller, from_authorization = _authenticate(table, request)
            if caller is None:
                return web.json_response(
                    {"error": "missing or invalid bearer token"},
                    status=401,
                    headers={"WWW-Authenticate": "Bearer"},
                )
            request[_REQUEST_CALLER] = caller
            request[_GATEWAY_AUTHORIZATION] = from_authorization
        return await handler(request)

    return middleware


def _authenticate(table: TokenTable, request: web.Request) -> tuple[Caller | None, bool]:
    """The caller, and whether `Authorization` held the gateway token (not an upstream one)."""
    scheme, _, token = request.headers.get("Authorization", "").partition(" ")
    if scheme.lower() == "bearer":
        caller = table.lookup(token.strip())
        if caller is not None:
            return caller, True
    header = request.headers.get(TOKEN_HEADER)
    return (table.lookup(header.strip()) if header else None), False


def authorization_is_ours(request: web.Request) -> bool:
    """True when `Authorization` carried the gateway token: the proxy must not forward it."""
    return bool(request.get(_GATEWAY_AUTHORIZATION, False))


ANONYMOUS = Caller(name="anonymous")


def caller_of(request: web.Request) -> Caller:
    return request.get(_REQUEST_CALLER) or ANONYMOUS
