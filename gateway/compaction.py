"""The `compaction:` section of a policy file: a leaf the policy schema and the archive share."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field


class RedactionRule(BaseModel):
    """A secret pattern replaced in the archived copy; the manifest records which ids applied."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    id: str
    pattern: str
    replacement: str = "[REDACTED:{id}]"


class CompactionSettings(BaseModel):
    """How transcripts are archived before Claude Code compacts them."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    archive: bool = True
    store: Literal["local", "s3"] = "local"
    path: str | None = Field(
        default=None, description="local store directory; default AGENT_GATEWAY_HOME/archive"
    )
    bucket: str | None = None
    prefix: str = ""
    endpoint_url: str | None = None
    region: str | None = None
    require_archive: bool = Field(
        default=True,
        description="a failed archive blocks the compaction (fail closed); false lets it go on",
    )
    redact: tuple[RedactionRule, ...] = ()
    builtin_redaction: bool = False
    settle_timeout_s: float = Field(default=2.0, ge=0, le=30)
    object_lock_days: int | None = Field(
        default=None, ge=1, description="s3: Object Lock retention for everything written"
    )
    object_lock_mode: Literal["GOVERNANCE", "COMPLIANCE"] = "GOVERNANCE"
