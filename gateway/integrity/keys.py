"""MAC keys for the audit log and the archive chains: HMAC-SHA256, keys from one file.

The file named by AGENT_GATEWAY_AUDIT_KEY_FILE holds one secret per line (at least 32
characters, e.g. `openssl rand -hex 32`); `#` starts a comment. The first key signs, every key
verifies: to rotate, put the new key on the first line and keep the old ones below for as long
as the records they signed are kept. A key's id is derived from its secret, so records name
their key without anyone having to name keys.

HMAC rather than Ed25519: the hook process pays for every import (the standard library's hmac
is already loaded; `cryptography` adds about 25 ms per call), and the copy that survives a
writer holding the key is the off-host one (OpenTelemetry logs), not a signature.
"""

from __future__ import annotations

import hashlib
import hmac
import os
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any, NamedTuple

from gateway.env import AUDIT_KEY_FILE_ENV, audit_key_file, gateway_home
from gateway.errors import ConfigError
from gateway.hashchain import HASH_KEY, MAC_KEY, PREV_KEY, canonical_json, record_hash

KEY_ID = "key_id"
MAC = MAC_KEY
MIN_SECRET_CHARS = 32
_MAC_DOMAIN = b"agent-gateway.mac/1\0"
_ID_DOMAIN = b"agent-gateway.key-id/1\0"


# Plain classes, not dataclasses: the command hook imports this and pays ~1 ms per dataclass.
class Key:
    __slots__ = ("id", "secret")

    def __init__(self, key_id: str, secret: bytes) -> None:
        self.id = key_id
        self.secret = secret

    def __repr__(self) -> str:
        return f"Key({self.id})"  # never the secret


class KeySet:
    """The signing key (first) and every key accepted when verifying."""

    __slots__ = ("keys", "source")

    def __init__(self, keys: tuple[Key, ...], source: str = "") -> None:
        if not keys:
            raise ValueError("a key set needs a key")
        self.keys = keys
        self.source = source

    def __repr__(self) -> str:
        return f"KeySet({', '.join(k.id for k in self.keys)}; {self.source})"

    @property
    def signing(self) -> Key:
        return self.keys[0]

    def find(self, key_id: str) -> Key | None:
        return next((k for k in self.keys if k.id == key_id), None)

    def check(self, record: Mapping[str, Any]) -> str | None:
        """Why the record's MAC fails, or None when a known key made it over its contents."""
        key_id, mac = record.get(KEY_ID), record.get(MAC)
        if not key_id or not mac:
            return "no MAC (written without the key, or by someone who does not have it)"
        key = self.find(str(key_id))
        if key is None:
            return f"MAC made with key {key_id}, which is not in {self.source or 'the key set'}"
        if not hmac.compare_digest(str(mac), mac_of(key, record_hash(record))):
            return f"MAC does not match its contents (key {key_id})"
        return None


def mac_of(key: Key, digest: str) -> str:
    return hmac.new(key.secret, _MAC_DOMAIN + digest.encode(), hashlib.sha256).hexdigest()


def sealed_link(
    record: Mapping[str, Any], prev_hash: str, keys: KeySet | None
) -> dict[str, Any]:
    """`link`, plus the signing key's id (hashed) and a MAC over the hash when keys are set."""
    return sealed_line(record, prev_hash, keys).record


class Sealed(NamedTuple):
    record: dict[str, Any]
    """The record linked (`prev_hash`, `hash`) and with keys sealed (`key_id`, `mac`)."""
    line: bytes
    """The same as one line of JSON: the canonical body that was hashed, `hash` (and `mac`)
    added at its end."""


def sealed_line(record: Mapping[str, Any], prev_hash: str, keys: KeySet | None) -> Sealed:
    """`sealed_link` and the record as one line of JSON, serialized once: the canonical body
    that was hashed, with `hash` (and `mac`) added at its end."""
    body = {**record, KEY_ID: keys.signing.id} if keys is not None else dict(record)
    body[PREV_KEY] = prev_hash
    body.pop(HASH_KEY, None)
    body.pop(MAC, None)
    canonical = canonical_json(body)
    digest = hashlib.sha256(canonical).hexdigest()
    tail = f',"{HASH_KEY}":"{digest}"'
    body[HASH_KEY] = digest
    if keys is not None:
        body[MAC] = mac_of(keys.signing, digest)
        tail += f',"{MAC}":"{body[MAC]}"'
    return Sealed(body, canonical[:-1] + tail.encode() + b"}")


def key_id(secret: bytes) -> str:
    return hashlib.sha256(_ID_DOMAIN + secret).hexdigest()[:16]


def parse_keys(text: str, source: str) -> KeySet:
    keys: list[Key] = []
    for number, raw in enumerate(text.splitlines(), start=1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        if len(line) < MIN_SECRET_CHARS:
            raise ConfigError(
                f"{source}:{number}: key too short ({len(line)} characters, at least "
                f"{MIN_SECRET_CHARS}; make one with `openssl rand -hex 32`)"
            )
        secret = line.encode()
        keys.append(Key(key_id(secret), secret))
    if not keys:
        raise ConfigError(f"{source}: no key in the file (one secret per line)")
    return KeySet(tuple(keys), source)


def load_keys(path: Path, home: Path | None = None) -> KeySet:
    """The key file at `path`; refused inside the gateway's state directory (the writers of
    the chains it protects must not be able to read it there)."""
    real = Path(os.path.realpath(path))
    state = Path(os.path.realpath(home if home is not None else gateway_home()))
    if real.is_relative_to(state):
        raise ConfigError(
            f"{AUDIT_KEY_FILE_ENV} {path} is inside AGENT_GATEWAY_HOME ({state}): "
            "keep the key outside the state it protects"
        )
    try:
        text = real.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        why = exc.strerror if isinstance(exc, OSError) and exc.strerror else exc
        raise ConfigError(f"{AUDIT_KEY_FILE_ENV} {path}: cannot read the key file: {why}") from None
    return parse_keys(text, str(path))


RECHECK_S = 1.0
"""How often a long-running process looks at the key file again (a rotation takes effect
within this long)."""
_LOADED: dict[str, tuple[float, tuple[int, int, int], KeySet]] = {}
"""Per key file path: when it was last looked at, its identity then, and its keys."""


def keys_from_env() -> KeySet | None:
    """The key set AGENT_GATEWAY_AUDIT_KEY_FILE names, or None when it is unset."""
    path = audit_key_file()
    if path is None:
        return None
    now = time.monotonic()
    known = _LOADED.get(str(path))
    if known is not None and now - known[0] < RECHECK_S:
        return known[2]
    try:
        st = os.stat(path)
    except OSError as exc:
        raise ConfigError(
            f"{AUDIT_KEY_FILE_ENV} {path}: cannot read the key file: {exc.strerror or exc}"
        ) from None
    ident = (st.st_ino, st.st_size, st.st_mtime_ns)
    keys = known[2] if known is not None and known[1] == ident else load_keys(path)
    _LOADED[str(path)] = (now, ident, keys)
    return keys


class _FromEnv:
    def __repr__(self) -> str:
        return "FROM_ENV"


FROM_ENV = _FromEnv()
KeyChoice = KeySet | None | _FromEnv
"""Keys to seal with: a key set, None for none, or FROM_ENV (AGENT_GATEWAY_AUDIT_KEY_FILE)."""


def resolve_keys(keys: KeyChoice) -> KeySet | None:
    return keys_from_env() if isinstance(keys, _FromEnv) else keys
