"""Hash chains over JSON records: pure functions shared by the audit log and the archive.

Positions in messages are 1-based ("record 12"), as an auditor counts them.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from typing import Any

GENESIS = "0" * 64
PREV_KEY = "prev_hash"
HASH_KEY = "hash"
MAC_KEY = "mac"
_UNHASHED = (HASH_KEY, MAC_KEY)
"""A record's own hash, and the MAC made over that hash."""


def canonical_json(value: Any) -> bytes:
    """Stable bytes for hashing: sorted keys, no whitespace, UTF-8."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode()


def record_hash(record: Mapping[str, Any]) -> str:
    """sha256 of a record without its own `hash` and `mac` (it includes `prev_hash`)."""
    body = {k: v for k, v in record.items() if k not in _UNHASHED}
    return hashlib.sha256(canonical_json(body)).hexdigest()


def link(record: Mapping[str, Any], prev_hash: str) -> dict[str, Any]:
    """Return the record with `prev_hash` and its own `hash` filled in."""
    linked = {**record, PREV_KEY: prev_hash}
    linked[HASH_KEY] = record_hash(linked)
    return linked


def link_problem(record: Mapping[str, Any], prev: str) -> str | None:
    """Why `record` does not follow a record whose hash is `prev`, or None."""
    if record.get(PREV_KEY) != prev:
        return "prev_hash does not match the record before it"
    if record.get(HASH_KEY) != record_hash(record):
        return "hash does not match its contents"
    return None

