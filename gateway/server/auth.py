"""Bearer-token authentication: one token, or a file mapping tokens to tenants.

The gateway token may arrive in `Authorization: Bearer`, `X-Agent-Gateway-Token` or, on
Messages API requests, `x-api-key`: Claude Code's `apiKeyHelper` (which the generated
settings use to send $AGENT_GATEWAY_TOKEN) fills whichever of Authorization and x-api-key the
session's own Anthropic credential leaves free. The header that held the gateway token is
never forwarded upstream.
"""

from __future__ import annotations

import hmac
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml
from aiohttp import web
from aiohttp.typedefs import Middleware

from gateway.budgets.limits import Limit, parse_budget
from gateway.env import METRICS_TOKEN_ENV, TOKEN_ENV, variable
from gateway.errors import ConfigError, one_line

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

ENTRY_KEYS = frozenset({"token", "token_env", "name", "policies", "runs_roots", "budget"})


@dataclass(frozen=True)
class Caller:
    """Who is calling (the tenant), and which policy layers beyond the server's apply."""

    name: str
    extra_policies: tuple[str, ...] = ()
    runs_roots: tuple[str, ...] | None = None
    """Directories this caller's remote runs may use; None: the server's --runs-root."""
    budget: tuple[Limit, ...] = ()
    """The team's spend limits (tokens file `budget:`); () means no budget."""


_REQUEST_CALLER: web.RequestKey[Caller] = web.RequestKey("agent_gateway.caller", Caller)
_TOKEN_HEADERS: web.RequestKey[frozenset[str]] = web.RequestKey(
    "agent_gateway.token_headers", frozenset
)


@dataclass(frozen=True)
class TokenTable:
    """Tokens mapped to callers; empty means authentication is off (loopback only)."""

    callers: Mapping[str, Caller]

    @property
    def enabled(self) -> bool:
        return bool(self.callers)

    def budgets(self) -> dict[str, tuple[Limit, ...]]:
        """Each team with a budget, and its limits (one team may hold several tokens)."""
        return {c.name: c.budget for c in self.callers.values() if c.budget}

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
        name: team-a            # the tenant: sessions belong to it
        policies: [policies/team-a.yaml]
        runs_roots: [/srv/runs/team-a]   # where its remote runs may work (else --runs-root)
        budget: {usd: 50, per: day}      # the team's spend (day|week|month, UTC), see limits.py
    ```
    """
    callers: dict[str, Caller] = {}
    if token:
        callers[token] = Caller(name="default")
    if tokens_file:
        for secret, caller in _read_tokens_file(Path(tokens_file)).items():
            if secret in callers:
                raise ConfigError(f"{tokens_file}: a token is listed twice")
            callers[secret] = caller
    return TokenTable(callers)


def read_budgets(tokens_file: str) -> dict[str, tuple[Limit, ...]]:
    """Each team's budget in a tokens file, validated like `serve` does, without needing the
    tokens themselves (`agent-gateway spend` may run where no token_env is set)."""
    callers = _read_tokens_file(Path(tokens_file), secrets=False)
    return {c.name: c.budget for c in callers.values() if c.budget}


def _read_tokens_file(path: Path, *, secrets: bool = True) -> dict[str, Caller]:
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    except (OSError, yaml.YAMLError) as exc:
        raise ConfigError(f"{path}: {one_line(exc)}") from None
    if not isinstance(data, dict) or set(data) != {"tokens"}:
        raise ConfigError(f"{path}: expected exactly one key, 'tokens:', holding a list")
    entries = data["tokens"]
    if not isinstance(entries, list):
        raise ConfigError(f"{path}: expected a 'tokens:' list")
    callers: dict[str, Caller] = {}
    for n, entry in enumerate(entries):
        secret, caller = _entry(path, n, entry, secrets)
        if secret in callers:
            raise ConfigError(f"{path}: tokens[{n}] repeats a token listed before it")
        callers[secret] = caller
    by_team: dict[str, tuple[Limit, ...]] = {}
    for caller in callers.values():
        if by_team.setdefault(caller.name, caller.budget) != caller.budget:
            raise ConfigError(
                f"{path}: the tokens of {caller.name} give it different budgets; "
                "a team has one budget, so give each of its tokens the same one"
            )
    return callers


def _entry(path: Path, n: int, entry: Any, secrets: bool) -> tuple[str, Caller]:
    where = f"{path}: tokens[{n}]"
    if not isinstance(entry, dict):
        raise ConfigError(f"{where} must be a mapping")
    unknown = sorted(str(k) for k in set(entry) - ENTRY_KEYS)
    if unknown:
        raise ConfigError(f"{where}: unknown key(s) {', '.join(unknown)}")
    secret = entry.get("token") or variable(str(entry.get("token_env", ""))) or ""
    if not secrets:
        secret = f"entry {n}"
    if not secret or not isinstance(secret, str):
        raise ConfigError(f"{where} has no token (or its token_env is unset)")
    name = entry.get("name", f"token-{n}")
    if not isinstance(name, str) or not name:
        raise ConfigError(f"{where}.name must be a non-empty string")
    base = path.parent
    policies = _paths(entry.get("policies"), f"{where}.policies", base)
    roots = entry.get("runs_roots")
    runs_roots = None if roots is None else _paths(roots, f"{where}.runs_roots", base)
    budget = () if entry.get("budget") is None else parse_budget(entry["budget"], f"{where}.budget")
    return secret, Caller(
        name=name, extra_policies=policies, runs_roots=runs_roots, budget=budget
    )


def _paths(value: Any, where: str, base: Path) -> tuple[str, ...]:
    if value is None:
        return ()
    if not isinstance(value, list) or not all(isinstance(p, str) and p for p in value):
        raise ConfigError(f"{where} must be a list of paths")
    return tuple(str(p if Path(p).is_absolute() else base / p) for p in value)


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
        body["hookSpecificOutput"] = {
            "hookEventName": "PreToolUse",
            "permissionDecision": "deny",
            "permissionDecisionReason": HOOK_AUTH_FAILURE,
        }
    elif event == "PreCompact":
        body.update({"decision": "block", "reason": HOOK_AUTH_FAILURE})
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
