"""Compiled policies cached on disk, so a hook call that hits the cache never imports
pydantic or yaml.

An entry is plain JSON data (`cache_format`), never pickle: nothing read from this writable
directory can run code. Each entry carries an HMAC-SHA256 under a per-home key (`cache.key`,
which the built-in rules keep the agent from reading or writing) and the bundle hash, which
is recomputed from the policy bytes just read. A corrupted, planted or stale entry fails one
of these checks and is ignored and rewritten.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import os
from collections.abc import Sequence
from pathlib import Path

from gateway import __version__
from gateway.errors import PolicyError
from gateway.policy.builtin import Protected
from gateway.policy.cache_format import FORMAT, policy_from_data, policy_to_data
from gateway.policy.compiled import Policy

MAX_ENTRY_BYTES = 16 * 1024 * 1024


def read_files(paths: Sequence[str]) -> list[tuple[str, bytes]]:
    if not paths:
        raise PolicyError("no policy file given (use --policy PATH or set AGENT_GATEWAY_POLICY)")
    bundle = []
    for path in paths:
        try:
            with open(path, "rb") as handle:
                bundle.append((path, handle.read()))
        except OSError as exc:
            raise PolicyError(f"cannot read policy file: {exc.strerror or exc}", path=path
                              ) from None
    return bundle


def bundle_hash(bundle: Sequence[tuple[str, bytes]]) -> str:
    """sha256 over the files' bytes, in layer order: the policy's identity in audit records."""
    digest = hashlib.sha256()
    for _, data in bundle:
        digest.update(data)
    return digest.hexdigest()


def cache_key(bundle: Sequence[tuple[str, bytes]], protected: Protected) -> str:
    digest = hashlib.sha256(f"{FORMAT}\0{__version__}\0{protected!r}\0".encode())
    for path, data in bundle:
        digest.update(os.path.abspath(path).encode() + b"\0")
        digest.update(hashlib.sha256(data).digest())
    return digest.hexdigest()


def load_cached(paths: Sequence[str], cache_dir: Path, secret_path: Path,
                protected: Protected) -> Policy:
    """The compiled policy for these files, from a verified cache entry or compiled anew."""
    bundle = read_files(paths)
    entry = cache_dir / f"{cache_key(bundle, protected)}.json"
    secret = _secret(secret_path)
    if secret is not None:
        cached = _read_entry(entry, secret, bundle_hash(bundle))
        if cached is not None:
            return cached
    from gateway.policy.loader import compile_bundle

    policy = compile_bundle(bundle, protected)
    if secret is not None:
        _store(entry, policy, secret)
    return policy


def _read_entry(entry: Path, secret: bytes, expected_hash: str) -> Policy | None:
    try:
        with open(entry, "rb") as handle:
            raw = handle.read(MAX_ENTRY_BYTES + 1)
        if len(raw) > MAX_ENTRY_BYTES:
            return None
        wrapper = json.loads(raw)
        body = wrapper["data"].encode() if isinstance(wrapper, dict) else b""
        mac = wrapper.get("mac") if isinstance(wrapper, dict) else None
        if not isinstance(mac, str) or not hmac.compare_digest(mac, _mac(secret, body)):
            return None
        policy = policy_from_data(json.loads(body))
    except (OSError, ValueError, KeyError, TypeError, AttributeError, RecursionError):
        return None  # absent, corrupted or planted: compile from the policy files
    return policy if policy.bundle_hash == expected_hash else None


def _mac(secret: bytes, body: bytes) -> str:
    return hmac.new(secret, body, hashlib.sha256).hexdigest()


def _secret(path: Path) -> bytes | None:
    """The per-home cache key, created on first use; None when it cannot be had (then no
    entry is trusted or written)."""
    try:
        with open(path, "rb") as handle:
            data = handle.read(64)
        if len(data) >= 32:
            return data
    except FileNotFoundError:
        pass
    except OSError:
        return None
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        return _secret_if_complete(path)
    except OSError:
        return None
    data = os.urandom(32)
    with os.fdopen(fd, "wb") as handle:
        handle.write(data)
    return data


def _secret_if_complete(path: Path) -> bytes | None:
    try:
        data = path.read_bytes()
    except OSError:
        return None
    return data if len(data) >= 32 else None


def _store(entry: Path, policy: Policy, secret: bytes) -> None:
    body = json.dumps(policy_to_data(policy), sort_keys=True, separators=(",", ":"))
    wrapper = json.dumps({"mac": _mac(secret, body.encode()), "data": body})
    import tempfile  # a miss only; a hit never writes

    try:
        entry.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=entry.parent, prefix=".policy-")
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(wrapper)
        os.replace(tmp, entry)  # atomic: concurrent hooks never read half a file
    except OSError:
        pass  # caching is an optimisation; deciding without it is still correct
