"""What an attacker with write access to the store (but not the key) does to archives."""

from __future__ import annotations

import hashlib
import io
import json
from typing import Any

from gateway.archive.local import LocalStore
from gateway.archive.store import chain_key, manifest_key, object_key
from gateway.archive.streaming import archive_stream
from gateway.hashchain import canonical_json, link


def forge_newest(store: LocalStore, text: bytes) -> dict[str, Any]:
    """Replace the newest archive's transcript with `text`: a new object, a manifest with
    every hash recomputed (its MAC cannot be), and the chain entry pointed at it."""
    entries = store.entries()
    newest = entries[-1]
    manifest = json.loads((store.root / manifest_key(newest.archive_id)).read_text())
    staged = io.BytesIO()
    stats = archive_stream(io.BytesIO(text), len(text), staged)
    digest = hashlib.sha256(text).hexdigest()
    path = store.root / object_key(digest)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(staged.getvalue())
    transcript = manifest["files"][0]
    transcript.update(sha256=digest, object=digest, size=len(text), stored_size=len(text),
                      lines=stats.lines)
    manifest.update(offset=len(text), lines=stats.lines)
    body = {k: v for k, v in manifest.items() if k not in ("hash", "prev_hash", "mac")}
    forged = link(body, manifest["prev_hash"])
    (store.root / manifest_key(forged["hash"])).write_bytes(canonical_json(forged) + b"\n")
    (store.root / chain_key(newest.seq)).write_text(forged["hash"] + "\n")
    return forged


def forge_checkpoint(store: LocalStore) -> None:
    """Point the checkpoint at the chain as it now stands, without a key."""
    entries = store.entries()
    path = store.root / "checkpoint.json"
    checkpoint = json.loads(path.read_text())
    body = {k: v for k, v in checkpoint.items() if k not in ("hash", "prev_hash", "mac")}
    body.update(count=len(entries), head=entries[-1].archive_id)
    path.write_bytes(canonical_json(link(body, checkpoint["prev_hash"])) + b"\n")
