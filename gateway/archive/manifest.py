"""Pure: the manifest of one archive and its place in the store's hash chain.

A manifest names every archived file by sha256 and is linked to the previous manifest in the
same store through `gateway.hashchain`; its own `hash` is the archive id.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import NamedTuple, NotRequired, TypedDict, cast

from gateway.errors import ArchiveError
from gateway.hashchain import HASH_KEY
from gateway.integrity.keys import KeySet, sealed_link
from gateway.types import JSON, JSONObject

FORMAT = "agent-gateway.archive/1"

FileRole = str
"""`transcript`, `subagents` or `tool-results`."""


class FileEntry(TypedDict):
    """One archived file as the manifest lists it (FileRecord.to_json)."""

    role: FileRole
    path: str
    size: int
    lines: int
    sha256: str
    object: str
    stored_size: int
    redactions: list[str]


class Manifest(TypedDict):
    """An archive's manifest as written (`manifest.json` in the store), linked and sealed."""

    format: str
    session_id: str
    trigger: str
    custom_instructions: str | None
    prompt_id: str
    transcript_path: str
    offset: int
    lines: int
    created_at: str
    gateway_version: str
    policy_hash: str
    redaction_rules: list[str]
    hook_input: JSONObject
    files: list[FileEntry]
    seq: int
    prev_hash: str
    hash: str
    """The archive id."""
    key_id: NotRequired[str]
    mac: NotRequired[str]


@dataclass(frozen=True, slots=True)
class FileRecord:
    """One archived file: what was read from disk and what was stored."""

    role: FileRole
    path: str
    """Path relative to the session's project directory (e.g. `<sid>/subagents/agent-x.jsonl`)."""
    size: int
    """Bytes archived: the byte offset the copy stopped at."""
    lines: int
    sha256: str
    """sha256 of the original bytes archived."""
    object: str
    """sha256 of the stored (possibly redacted) bytes: the content address of the object."""
    stored_size: int
    redactions: tuple[str, ...] = ()
    """Ids of the redaction rules that matched, sorted."""

    def to_json(self) -> FileEntry:
        return {
            "role": self.role,
            "path": self.path,
            "size": self.size,
            "lines": self.lines,
            "sha256": self.sha256,
            "object": self.object,
            "stored_size": self.stored_size,
            "redactions": list(self.redactions),
        }


@dataclass(frozen=True, slots=True)
class ArchiveFacts:
    """Everything about one archive except its place in the chain."""

    session_id: str
    trigger: str
    custom_instructions: str | None
    prompt_id: str
    transcript_path: str
    created_at: str
    gateway_version: str
    policy_hash: str
    files: Sequence[FileRecord]
    hook_input: Mapping[str, JSON]
    """The PreCompact hook input as received."""
    redaction_rules: Sequence[str] = ()
    """Ids of every redaction rule that was active, matched or not."""


def build_manifest(
    facts: ArchiveFacts, prev_hash: str, position: int, keys: KeySet | None = None
) -> Manifest:
    """The linked (and with keys, MACed) manifest at a 1-based chain position;
    `manifest["hash"]` is the archive id."""
    transcript = next((f for f in facts.files if f.role == "transcript"), None)
    body: dict[str, object] = {
        "format": FORMAT,
        "session_id": facts.session_id,
        "trigger": facts.trigger,
        "custom_instructions": facts.custom_instructions,
        "prompt_id": facts.prompt_id,
        "transcript_path": facts.transcript_path,
        "offset": transcript.size if transcript else 0,
        "lines": transcript.lines if transcript else 0,
        "created_at": facts.created_at,
        "gateway_version": facts.gateway_version,
        "policy_hash": facts.policy_hash,
        "redaction_rules": list(facts.redaction_rules),
        "hook_input": dict(facts.hook_input),
        "files": [f.to_json() for f in facts.files],
        "seq": position,
    }
    return cast(Manifest, sealed_link(body, prev_hash, keys))


class ArchivedFile(NamedTuple):
    path: str
    """Relative to the session's project directory."""
    object: str
    """The stored object's content address."""


def archived_files(manifest: Mapping[str, JSON]) -> list[ArchivedFile]:
    """Every file a manifest lists; ArchiveError naming the first one that is malformed."""
    files = manifest.get("files")
    if not isinstance(files, list):
        raise ArchiveError("the manifest has no list of files")
    found: list[ArchivedFile] = []
    for n, f in enumerate(files):
        path = f.get("path") if isinstance(f, dict) else None
        digest = f.get("object") if isinstance(f, dict) else None
        if not isinstance(path, str) or not isinstance(digest, str):
            raise ArchiveError(f"the manifest's files[{n}] has no path and object")
        found.append(ArchivedFile(path, digest))
    return found


def archive_id(manifest: Mapping[str, JSON]) -> str:
    return str(manifest[HASH_KEY])


def object_digests(manifest: Mapping[str, JSON]) -> list[str]:
    """Content addresses of every object the manifest references, in manifest order."""
    files = manifest.get("files")
    if not isinstance(files, list):
        return []
    return [str(f["object"]) for f in files if isinstance(f, Mapping) and "object" in f]


def transcript_object(manifest: Mapping[str, JSON]) -> str | None:
    files = manifest.get("files")
    if not isinstance(files, list):
        return None
    for f in files:
        if isinstance(f, Mapping) and f.get("role") == "transcript":
            return str(f["object"])
    return None
