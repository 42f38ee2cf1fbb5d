"""Bearer-token authentication against the token table (gateway.tenancy.tokens).

The gateway token may arrive in `Authorization: Bearer`, `X-Agent-Gateway-Token` or, on
Messages API requests, `x-api-key`: Claude Code's `apiKeyHelper` (which the generated
settings use to send $AGENT_GATEWAY_TOKEN) fills whichever of Authorization and x-api-key the
session's own Anthropic credential leaves free. The header that held the gateway token is
never forwarded upstream.
"""

from __future__ import annotations

import hmac
from collections.abc import Awaitable, Callable
from typing import Any

from aiohttp import web
from aiohttp.typedefs import Middleware

from gateway.env import METRICS_TOKEN_ENV, TOKEN_ENV
from gateway.hookio.render import render_block, render_deny
from gateway.tenancy.tokens import Caller, TokenTable

OPEN_PATHS = frozenset({"/healthz", "/readyz", "/metrics"})
"""/metrics checks its own token (scraper_allowed): tenants' tokens do not open it. /readyz
answers anyone whether the replica is ready, and why only to a token (app.py)."""
TOKEN_HEADER = "X-Agent-Gateway-Token"
"""The gateway token where `Authorization` carries the upstream's credential (the proxy):
Claude Code sends it with ANTHROPIC_CUSTOM_HEADERS="X-Agent-Gateway-Token: TOKEN"."""
PROXY_AUTH_FAILURE = (
    f"agent-gateway: this request carries no valid gateway token. Export {TOKEN_ENV} with "
    "this gateway's token: the settings printed by `agent-gateway settings` send it "
    f'(apiKeyHelper); ANTHROPIC_CUSTOM_HEADERS="{TOKEN_HEADER}: ${TOKEN_ENV}" works too'
)
"""Answered as a 403 permission_error: Claude Code 2.1.332 gives up on that at once and shows
the message, while it retries a 401 for minutes. The message must not mention the API-key
header by name: Claude Code then shows "Invalid API key" in its place."""
HOOK_AUTH_FAILURE = (
    f"agent-gateway: missing or invalid gateway token (Authorization: Bearer ${TOKEN_ENV})"
)

METRICS_AUTH_FAILURE = (
    f"agent-gateway: GET /metrics needs 'Authorization: Bearer ${METRICS_TOKEN_ENV}' "
    "(the scraper's token, set on serve; a tenant's token does not open it)"
)

_REQUEST_CALLER: web.RequestKey[Caller] = web.RequestKey("agent_gateway.caller", Caller)
_TOKEN_HEADERS: web.RequestKey[frozenset[str]] = web.RequestKey(
    "agent_gateway.token_headers", frozenset
)


Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


def auth_middleware(table: TokenTable) -> Middleware:
    @web.middleware
    async def middleware(request: web.Request, handler: Handler) -> web.StreamResponse:
        if table.enabled and request.path not in OPEN_PATHS:
            caller, headers = _authenticate(table, request)
            if caller is None:
                return _refuse(request)
            request[_REQUEST_CALLER] = caller
            request[_TOKEN_HEADERS] = headers
        return await handler(request)

    return middleware


def _refuse(request: web.Request) -> web.Response:
    if request.path.startswith("/v1/messages"):
        from gateway.server.proxy import anthropic_error

        return anthropic_error(403, "permission_error", PROXY_AUTH_FAILURE)
    body: dict[str, Any] = {"error": HOOK_AUTH_FAILURE}
    event = request.match_info.get("event") if request.path.startswith("/hooks/") else None
    if event == "PreToolUse":
        body.update(render_deny(HOOK_AUTH_FAILURE))
    elif event == "PreCompact":
        body.update(render_block(HOOK_AUTH_FAILURE))
    return web.json_response(body, status=401, headers={"WWW-Authenticate": "Bearer"})


def _authenticate(table: TokenTable, request: web.Request) -> tuple[Caller | None, frozenset[str]]:
    """The caller, and the (lower-case) names of the headers that held its token."""
    found: Caller | None = None
    held: set[str] = set()
    scheme, _, bearer = request.headers.get("Authorization", "").partition(" ")
    candidates = [
        ("authorization", bearer.strip() if scheme.lower() == "bearer" else ""),
        (TOKEN_HEADER.lower(), request.headers.get(TOKEN_HEADER, "").strip()),
        ("x-api-key", request.headers.get("x-api-key", "").strip()),
    ]
    for header, value in candidates:
        caller = table.lookup(value) if value else None
        if caller is None:
            continue
        if found is not None and caller != found:
            return None, frozenset()  # two different gateway tokens: refuse both
        found = caller
        held.add(header)
    return found, frozenset(held)


def identify(table: TokenTable, request: web.Request) -> Caller | None:
    """The caller a request's gateway token names, on a path the middleware leaves open."""
    return _authenticate(table, request)[0] if table.enabled else None


def scraper_allowed(request: web.Request, metrics_token: str) -> bool:
    scheme, _, bearer = request.headers.get("Authorization", "").partition(" ")
    given = bearer.strip() if scheme.lower() == "bearer" else ""
    return bool(metrics_token) and hmac.compare_digest(given.encode(), metrics_token.encode())


def gateway_token_headers(request: web.Request) -> frozenset[str]:
    """Headers (lower-case) that carried the gateway token: the proxy must not forward them."""
    held: frozenset[str] = request.get(_TOKEN_HEADERS, frozenset())
    return held


ANONYMOUS = Caller(name="anonymous")


def caller_of(request: web.Request) -> Caller:
    return request.get(_REQUEST_CALLER) or ANONYMOUS
