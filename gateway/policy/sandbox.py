"""A policy compiled into Claude Code's OS sandbox settings (`sandbox: required`). Pure.

The hook decides what it can prove from a tool call; the sandbox (bubblewrap and socat on
Linux, Seatbelt on macOS) holds what only the kernel sees: a path computed at run time, what an
unknown program opens, a write outside the project. Both come from one policy:

- Read deny rules -> `Read(...)` rules in `permissions.deny`, which Claude Code 2.1.332 applies
  inside the sandbox too, rooted at the session's directory (a `**/.env` in
  `sandbox.filesystem.denyRead` is rooted at the directory of the settings file that holds it,
  and matches nothing for settings given inline: measured);
- Edit deny rules -> `Edit(...)` rules there, which it merges into the sandbox's write denies;
- the built-in protections (secrets: neither read nor written; the gateway's state, the policy
  files, Claude Code's settings, the gateway's code: not written) -> `sandbox.filesystem`
  `denyRead` and `denyWrite`, all absolute or under `~`;
- WebFetch domain deny rules -> `sandbox.network.deniedDomains`; every other host stays
  reachable (`allowedDomains: ["*"]`) unless the policy restricts WebFetch to a list;
- `failIfUnavailable` and no unsandboxed fallback: where the sandbox cannot start, Claude Code
  refuses to run rather than run Bash unconfined.

Ask rules are not compiled (the kernel cannot ask); monitor rules are not enforced anywhere.
The fingerprint names what was compiled from the policy files: a hook relaxes its file
decisions for a session only when the session's settings carry the fingerprint of the policy
it decides with.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from gateway.policy.builtin import HOOK_ONLY
from gateway.policy.compiled import BUILTIN_LAYER, AnyInput, DomainRule, Layer, PathRule, Rule
from gateway.policy.paths import PathPattern

FINGERPRINT_CHARS = 16


@dataclass(frozen=True)
class SandboxConfig:
    """What the sandbox is told; `settings()` is the fragment of Claude Code's settings."""

    read_rules: tuple[str, ...] = ()
    """`Read(...)` permission rules in Claude Code's syntax (policy files)."""
    write_rules: tuple[str, ...] = ()
    """`Edit(...)` permission rules in Claude Code's syntax (policy files)."""
    deny_read: tuple[str, ...] = ()
    """`sandbox.filesystem.denyRead`: built-in protections, absolute or under `~`."""
    deny_write: tuple[str, ...] = ()
    allow_write: tuple[str, ...] = ()
    """Absolute directories the policy's Edit allow rules name, beyond the session's."""
    denied_domains: tuple[str, ...] = ()
    allowed_domains: tuple[str, ...] = ("*",)
    withheld_env: tuple[str, ...] = ()
    """Variables sandboxed commands do not inherit (policy/withheld_env.py)."""

    def settings(self) -> dict[str, Any]:
        filesystem: dict[str, list[str]] = {"denyRead": list(self.deny_read),
                                            "denyWrite": list(self.deny_write)}
        if self.allow_write:
            filesystem["allowWrite"] = list(self.allow_write)
        network: dict[str, list[str]] = {"allowedDomains": list(self.allowed_domains)}
        if self.denied_domains:
            network["deniedDomains"] = list(self.denied_domains)
        sandbox: dict[str, Any] = {
            "enabled": True,
            "failIfUnavailable": True,
            "allowUnsandboxedCommands": False,
            # commands that make namespaces of their own could undo its mounts
            "allowNestedUserNamespaces": False,
            "filesystem": filesystem,
            "network": network,
        }
        if self.withheld_env:
            sandbox["credentials"] = {"envVars": [{"name": name, "mode": "deny"}
                                                  for name in self.withheld_env]}
        return {
            "sandbox": sandbox,
            "permissions": {"deny": [*self.read_rules, *self.write_rules]},
        }

def compile_sandbox(layers: Iterable[Layer], home: str, withheld_env: Iterable[str] = ()
                    ) -> SandboxConfig:
    """The sandbox that holds these layers' enforced file and domain deny rules. `home`
    is the home directory built-in paths under it are written relative to (`~/...`), so one
    managed settings file serves every user. `withheld_env`: variable names sandboxed
    commands do not inherit (withheld_env.withheld_names)."""
    layers = tuple(layers)
    reads: list[str] = []
    writes: list[str] = []
    deny_read: list[str] = []
    deny_write: list[str] = []
    allow_write: list[str] = []
    for layer in layers:
        builtin = layer.name == BUILTIN_LAYER
        for mode, tool in (("read", "Read"), ("write", "Edit")):
            for rule in _enforced(layer, tool, "deny"):
                assert isinstance(rule.matcher, PathRule)
                if builtin and rule.id in HOOK_ONLY:
                    continue
                pattern = rule.matcher.pattern
                if builtin and pattern.anchor in ("abs", "home"):
                    target = deny_read if mode == "read" else deny_write
                    target.append(_filesystem_path(pattern, home))
                else:
                    text = claude_path(rule.matcher.pattern)
                    (reads if mode == "read" else writes).append(f"{tool}({text})")
        if not builtin:
            for rule in _enforced(layer, "Edit", "allow"):
                assert isinstance(rule.matcher, PathRule)
                root = _absolute_root(rule.matcher.pattern, home)
                if root:
                    allow_write.append(root)
    denied = tuple(_dedupe(_denied_domains(layers)))
    return SandboxConfig(
        tuple(_dedupe(reads)), tuple(_dedupe(writes)), tuple(_dedupe(deny_read)),
        tuple(_dedupe(deny_write)),
        tuple(_dedupe(p for p in allow_write if not _overlaps(p, [*deny_read, *deny_write]))),
        denied, _allowed_domains(layers), tuple(withheld_env),
    )


def sandbox_fingerprint(layers: Iterable[Layer], withheld: Iterable[str] = ()) -> str:
    """What identifies the sandbox compiled from the policy files' rules and withheld
    variables (the built-in protections are this host's, and written relative to its home:
    not part of it)."""
    files = [layer for layer in layers if layer.name != BUILTIN_LAYER]
    data = json.dumps(compile_sandbox(files, "", withheld).settings(), sort_keys=True,
                      separators=(",", ":"))
    return hashlib.sha256(data.encode()).hexdigest()[:FINGERPRINT_CHARS]


def _enforced(layer: Layer, tool: str, decision: str) -> Iterable[Rule]:
    if layer.mode != "enforce":
        return
    for rule in layer.by_tool.get(tool, ()):
        if rule.decision == decision and not rule.monitor and isinstance(rule.matcher, PathRule):
            yield rule


def claude_path(pattern: PathPattern) -> str:
    """A gateway path pattern as Claude Code's rule syntax says it: `//abs`, `~/home`, and
    for the session's directory `./x` (anchored) or `**/x` (a gitignore pattern without a
    slash matches at any depth)."""
    source = pattern.source
    if pattern.anchor == "abs" or pattern.anchor == "home":
        text = source
    elif pattern.anchor == "root":
        text = "./" + source.lstrip("/")
    else:
        body = source.removeprefix("./")
        if body.startswith("**/"):
            text = body
        else:
            text = ("**/" if pattern.floating else "./") + body.lstrip("/")
    return text + "**" if text.endswith("/") else text


def _filesystem_path(pattern: PathPattern, home: str) -> str:
    """A built-in pattern (absolute or under `~`) for `sandbox.filesystem`: a directory's
    `/**` dropped (one mount covers what is below), glob escapes removed (these are literal
    paths), under `~` when in the home directory so that one managed file serves every user."""
    source = pattern.source.removesuffix("/**")
    if pattern.anchor == "home":
        return source
    path = "/" + source.removeprefix("//").replace("\\", "")
    home = home.rstrip("/")
    if home and (path == home or path.startswith(home + "/")):
        return "~" + path[len(home):]
    return "/" + path


def _absolute_root(pattern: PathPattern, home: str) -> str:
    """The literal directory an abs- or home-anchored allow rule names, as a sandbox path."""
    if pattern.anchor not in ("abs", "home") or not pattern.prefix:
        return ""
    return ("//" if pattern.anchor == "abs" else "~/") + pattern.prefix.lstrip("/")


def _overlaps(path: str, denied: list[str]) -> bool:
    """A write grant over a denied path would re-open it (a later bind mount wins: measured
    with an allowWrite over a denyRead directory)."""
    def norm(p: str) -> str:
        return p.removesuffix("/**").rstrip("/")

    grant = norm(path)
    for deny in denied:
        other = norm(deny)
        if other == grant or other.startswith(grant + "/") or grant.startswith(other + "/"):
            return True
    return False


def _denied_domains(layers: tuple[Layer, ...]) -> Iterable[str]:
    for layer in layers:
        if layer.mode != "enforce":
            continue
        for rule in layer.by_tool.get("WebFetch", ()):
            if rule.decision == "deny" and not rule.monitor and isinstance(rule.matcher,
                                                                           DomainRule):
                domain = rule.matcher.pattern
                if domain.host:
                    yield ("*." if domain.subdomains else "") + domain.host


def _allowed_domains(layers: tuple[Layer, ...]) -> tuple[str, ...]:
    """Every host (`*`), unless a layer denies WebFetch to all hosts but those it allows."""
    restricted = False
    allowed: list[str] = []
    for layer in layers:
        if layer.mode != "enforce" or layer.name == BUILTIN_LAYER:
            continue
        rules = [r for r in layer.by_tool.get("WebFetch", ()) if not r.monitor]
        closed = layer.default in ("deny", "ask") or any(
            r.decision != "allow" and (isinstance(r.matcher, AnyInput) or (
                isinstance(r.matcher, DomainRule) and not r.matcher.pattern.host))
            for r in rules)
        restricted = restricted or closed
        for rule in rules:
            if rule.decision == "allow" and isinstance(rule.matcher, DomainRule):
                domain = rule.matcher.pattern
                allowed.append(("*." if domain.subdomains else "") + (domain.host or "*"))
    return tuple(_dedupe(allowed)) if restricted else ("*",)


def with_hook_hosts(settings: Mapping[str, Any]) -> dict[str, Any]:
    """`settings` whose sandbox, when it restricts the network, lets Claude Code reach its
    own http hooks: Claude Code sends them through the sandbox's proxy, which refuses a host
    off the list (403), and `onFailure: block` then refuses every tool call. Each hook's
    `host:port` is listed; the proxy still refuses sandboxed commands a loopback address
    (measured with Claude Code 2.1.337: `curl 127.0.0.1:PORT` from Bash gets no connection)."""
    sandbox = settings.get("sandbox")
    network = sandbox.get("network") if isinstance(sandbox, dict) else None
    allowed = network.get("allowedDomains") if isinstance(network, dict) else None
    if not isinstance(allowed, list) or "*" in allowed:
        return dict(settings)
    hosts = [h for h in _hook_hosts(settings.get("hooks")) if h not in allowed]
    if not hosts:
        return dict(settings)
    assert isinstance(sandbox, dict) and isinstance(network, dict)
    return {**settings, "sandbox": {**sandbox, "network": {
        **network, "allowedDomains": [*allowed, *_dedupe(hosts)]}}}


def _hook_hosts(hooks: object) -> Iterable[str]:
    if not isinstance(hooks, dict):
        return
    for matchers in hooks.values():
        for matcher in matchers if isinstance(matchers, list) else ():
            handlers = matcher.get("hooks") if isinstance(matcher, dict) else None
            for handler in handlers if isinstance(handlers, list) else ():
                url = handler.get("url") if isinstance(handler, dict) else None
                if isinstance(url, str):
                    parts = urlsplit(url)
                    if parts.hostname:
                        port = parts.port or (443 if parts.scheme == "https" else 80)
                        host = f"[{parts.hostname}]" if ":" in parts.hostname else parts.hostname
                        yield f"{host}:{port}"


def _dedupe(items: Iterable[str]) -> list[str]:
    return list(dict.fromkeys(items))
