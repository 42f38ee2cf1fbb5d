from __future__ import annotations

from typing import Any

from gateway.archive.chain import ChainEntry, first_break, head_hash, next_seq
from gateway.archive.manifest import (
    ArchiveFacts,
    FileRecord,
    archive_id,
    build_manifest,
    object_digests,
    transcript_object,
)
from gateway.hashchain import GENESIS, record_hash

TRANSCRIPT = FileRecord("transcript", "s.jsonl", 10, 2, "a" * 64, "b" * 64, 12, ("r1",))
SUBAGENT = FileRecord("subagents", "s/subagents/agent-x.jsonl", 5, 1, "c" * 64, "c" * 64, 5)


def facts(session: str = "s1") -> ArchiveFacts:
    return ArchiveFacts(
        session_id=session,
        trigger="auto",
        custom_instructions="keep the plan",
        prompt_id="p",
        transcript_path="/x/s.jsonl",
        created_at="2026-01-01T00:00:00.000Z",
        gateway_version="0.1.0",
        policy_hash="f" * 64,
        files=[TRANSCRIPT, SUBAGENT],
        hook_input={"trigger": "auto"},
        redaction_rules=("r1", "r2"),
    )


def chain(n: int) -> tuple[list[ChainEntry], dict[str, dict[str, Any]]]:
    entries: list[ChainEntry] = []
    manifests: dict[str, dict[str, Any]] = {}
    for i in range(n):
        m = build_manifest(facts(f"s{i}"), head_hash(entries), i + 1)
        entries.append(ChainEntry(next_seq(entries), archive_id(m)))
        manifests[archive_id(m)] = m
    return entries, manifests


def test_manifest_fields_and_hash() -> None:
    m = build_manifest(facts(), GENESIS, 1)
    assert m["prev_hash"] == GENESIS and m["seq"] == 1 and "mac" not in m
    assert m["hash"] == record_hash(m)
    assert m["offset"] == 10 and m["lines"] == 2
    assert m["files"][0]["sha256"] == "a" * 64 and m["files"][0]["object"] == "b" * 64
    assert m["files"][0]["redactions"] == ["r1"]
    assert m["custom_instructions"] == "keep the plan"
    assert m["policy_hash"] == "f" * 64 and m["gateway_version"] == "0.1.0"
    assert object_digests(m) == ["b" * 64, "c" * 64]
    assert transcript_object(m) == "b" * 64


def test_intact_chain() -> None:
    entries, manifests = chain(4)
    assert first_break(entries, manifests) is None
    assert manifests[entries[2].archive_id]["prev_hash"] == entries[1].archive_id


def test_edited_manifest_breaks_its_link() -> None:
    entries, manifests = chain(4)
    manifests[entries[2].archive_id]["trigger"] = "manual"
    broken = first_break(entries, manifests)
    assert broken is not None and broken.position == 3 and "edited" in broken.reason


def test_missing_manifest() -> None:
    entries, manifests = chain(3)
    del manifests[entries[1].archive_id]
    broken = first_break(entries, manifests)
    assert broken is not None and broken.position == 2 and "missing" in broken.reason


def test_deleted_archive_in_the_middle() -> None:
    entries, manifests = chain(4)
    del entries[1]
    broken = first_break(entries, manifests)
    assert broken is not None and broken.position == 2 and "deleted" in broken.reason


def test_deleted_and_renumbered() -> None:
    entries, manifests = chain(4)
    kept = [entries[0], *entries[2:]]
    renumbered = [ChainEntry(i, e.archive_id) for i, e in enumerate(kept)]
    broken = first_break(renumbered, manifests)
    assert broken is not None and broken.position == 2 and "prev_hash" in broken.reason


def test_swapped_archives() -> None:
    entries, manifests = chain(4)
    swapped = [
        entries[0],
        ChainEntry(1, entries[2].archive_id),
        ChainEntry(2, entries[1].archive_id),
        entries[3],
    ]
    broken = first_break(swapped, manifests)
    assert broken is not None and broken.position == 2
    assert str(broken).startswith("archive 2 (")
