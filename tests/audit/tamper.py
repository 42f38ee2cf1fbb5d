"""What an attacker with write access to AGENT_GATEWAY_HOME (but not the key) does to the log."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from gateway.audit import append_decision, checkpoint_path
from gateway.hashchain import GENESIS, link
from gateway.integrity.keys import KeySet, parse_keys
from gateway.types import Decision, ToolCall

KEY = parse_keys("k" * 40 + "\n", "test-key")
OTHER_KEY = parse_keys("o" * 40 + "\n", "attacker-key")


def fill(path: Path, count: int, keys: KeySet | None = None, start: int = 0) -> None:
    for i in range(start, start + count):
        call = ToolCall("Bash", {"command": f"rm -rf /srv/{i}"}, tool_use_id=f"t{i}",
                        session_id="s1")
        append_decision(call, Decision("deny", "org.yaml:permissions.deny[1]", "no"), path,
                        keys=keys)


def records(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def write(path: Path, items: list[dict[str, Any]]) -> None:
    path.write_text("".join(json.dumps(r, sort_keys=True) + "\n" for r in items))


def rechain(items: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Recompute every hash and link, as someone without the key can; MACs cannot follow."""
    out, prev = [], GENESIS
    for record in items:
        body = {k: v for k, v in record.items() if k not in ("hash", "prev_hash")}
        linked = link(body, prev)
        out.append(linked)
        prev = linked["hash"]
    return out


def forge_checkpoint(path: Path, items: list[dict[str, Any]]) -> None:
    """Rewrite the checkpoint to match `items`, without a key (its MAC cannot follow)."""
    cp_file = checkpoint_path(path)
    checkpoint = json.loads(cp_file.read_text())
    body = {k: v for k, v in checkpoint.items() if k not in ("hash", "prev_hash", "mac")}
    body.update(count=len(items), head=items[-1]["hash"] if items else GENESIS)
    body.pop("alarm", None)
    cp_file.write_text(json.dumps(link(body, checkpoint["prev_hash"])) + "\n")
