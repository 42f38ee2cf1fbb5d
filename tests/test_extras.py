"""Features that need an extra say which one, in one line, when the package is missing."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from gateway.archive.store import open_store
from gateway.compaction import CompactionSettings
from gateway.errors import ConfigError
from gateway.handlers.compact import archive_before_compact
from gateway.types import CompactRequest


@pytest.fixture
def without_boto3(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delitem(sys.modules, "gateway.archive.s3", raising=False)
    monkeypatch.setitem(sys.modules, "boto3", None)  # `import boto3` now fails


S3 = CompactionSettings(store="s3", bucket="archives", require_archive=True, settle_timeout_s=0)


def test_the_s3_store_names_its_extra(without_boto3: None) -> None:
    with pytest.raises(ConfigError) as caught:
        open_store(S3)
    message = str(caught.value)
    assert "\n" not in message
    assert "needs the boto3 package: pip install 'agent-gateway[s3]'" in message


def test_a_required_s3_archive_without_the_extra_blocks_compaction(
    without_boto3: None, tmp_path: Path
) -> None:
    transcript = tmp_path / "s.jsonl"
    transcript.write_text("{}\n")
    request = CompactRequest(session_id="s", transcript_path=str(transcript), trigger="manual")
    outcome = archive_before_compact(request, S3, "")
    assert outcome.blocked and "agent-gateway[s3]" in outcome.block_reason


def test_redis_owners_name_their_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    from gateway.server.owners import RedisSessionOwners

    monkeypatch.setitem(sys.modules, "redis", None)
    with pytest.raises(ConfigError, match=r"pip install 'agent-gateway\[redis\]'"):
        RedisSessionOwners("redis://127.0.0.1:1/0")
