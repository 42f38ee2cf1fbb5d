"""Hash chains over JSON records: pure functions shared by the audit log and the archive."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Mapping
from typing import Any

GENESIS = "0" * 64
PREV_KEY = "prev_hash"
HASH_KEY = "hash"


def canonical_json(value: Any) -> bytes:
    """Stable bytes for hashing: sorted keys, no whitespace, UTF-8."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode()


def record_hash(record: Mapping[str, Any]) -> str:
    """sha256 of a record without its own `hash` field (it includes `prev_hash`)."""
    body = {k: v for k, v in record.items() if k != HASH_KEY}
    return hashlib.sha256(canonical_json(body)).hexdigest()


def link(record: Mapping[str, Any], prev_hash: str) -> dict[str, Any]:
    """Return the record with `prev_hash` and its own `hash` filled in."""
    linked = {**record, PREV_KEY: prev_hash}
    linked[HASH_KEY] = record_hash(linked)
    return linked


def first_broken_link(records: Iterable[Mapping[str, Any]]) -> tuple[int, str] | None:
    """Index and description of the first record that breaks the chain, or None if intact."""
    prev = GENESIS
    for index, record in enumerate(records):
        if record.get(PREV_KEY) != prev:
            return index, f"record {index}: prev_hash does not match the record before it"
        if record.get(HASH_KEY) != record_hash(record):
            return index, f"record {index}: hash does not match its contents"
        prev = str(record[HASH_KEY])
    return None
