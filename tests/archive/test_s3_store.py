"""The S3 store against a real S3-protocol server (moto) on loopback."""

from __future__ import annotations

import contextlib
import hashlib
import io
import threading
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from botocore.exceptions import ClientError

from gateway.archive.archiver import archive_session
from gateway.archive.reader import copy_object, verify, verify_store, version_breaks
from gateway.archive.store import chain_key, manifest_key, object_key, open_store
from gateway.compaction import CompactionSettings
from gateway.errors import ArchiveError, ConfigError
from gateway.hashchain import canonical_json, link
from tests.archive.conftest import Session, jsonl
from tests.audit.tamper import KEY

moto_server = pytest.importorskip(
    "moto.server", reason="moto[server] is not installed: the S3 store needs an S3 server"
)
BUCKET = "archives"


@pytest.fixture(scope="module")
def endpoint() -> Iterator[str]:
    server = moto_server.ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    yield f"http://{host}:{port}"
    server.stop()


@pytest.fixture
def s3_settings(endpoint: str, monkeypatch: pytest.MonkeyPatch, request: Any) -> Any:
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing")
    monkeypatch.delenv("AWS_PROFILE", raising=False)
    settings = CompactionSettings(
        store="s3",
        bucket=BUCKET,
        prefix=f"team/{request.node.name}/",
        endpoint_url=endpoint,
        region="us-east-1",
        settle_timeout_s=0,
    )
    store = open_store(settings)
    client: Any = store.client  # type: ignore[attr-defined]
    with contextlib.suppress(client.exceptions.BucketAlreadyOwnedByYou):
        client.create_bucket(Bucket=BUCKET)
    return settings


def test_round_trip_and_chain(
    make_session: Callable[..., Session], s3_settings: CompactionSettings
) -> None:
    store = open_store(s3_settings)
    s = make_session()
    first = archive_session(s.request(), s3_settings, "ph", store)
    second = archive_session(make_session().request("auto"), s3_settings, "ph", store)
    assert second["prev_hash"] == first["hash"]
    out = io.BytesIO()
    copy_object(store, first["files"][0]["object"], out.write)
    assert out.getvalue() == s.transcript.read_bytes()
    assert verify(store) == (2, None)
    assert store.location == f"s3://{BUCKET}/{s3_settings.prefix}"


def test_large_object_goes_multipart(
    make_session: Callable[..., Session], s3_settings: CompactionSettings
) -> None:
    # Incompressible-ish content so the zstd object exceeds the 8 MB multipart threshold.
    blob = hashlib.shake_256(b"seed").digest(12_000_000)
    s = make_session(blob.hex().encode()[:20_000_000] + b"\n", extras=False)
    store = open_store(s3_settings)
    m = archive_session(s.request(), s3_settings, "ph", store)
    assert m["offset"] == s.transcript.stat().st_size
    assert verify(store) == (1, None)


def test_tampering_is_detected(
    make_session: Callable[..., Session], s3_settings: CompactionSettings
) -> None:
    store: Any = open_store(s3_settings)
    ms = [
        archive_session(
            make_session(jsonl({"n": i}), extras=False).request(), s3_settings, "", store
        )
        for i in range(3)
    ]
    key = store.prefix + object_key(ms[1]["files"][0]["object"])
    data = bytearray(store.client.get_object(Bucket=BUCKET, Key=key)["Body"].read())
    data[-6] ^= 0xFF
    store.client.put_object(Bucket=BUCKET, Key=key, Body=bytes(data))
    _, broken = verify(store)
    assert broken is not None and broken.position == 2 and "corrupted" in broken.reason

    store.client.delete_object(Bucket=BUCKET, Key=store.prefix + chain_key(2))
    store.client.put_object(Bucket=BUCKET, Key=store.prefix + chain_key(1), Body=ms[2]["hash"])
    _, broken = verify(store)
    assert broken is not None and broken.position == 2 and "prev_hash" in broken.reason


def test_concurrent_appends_never_overwrite(
    make_session: Callable[..., Session], s3_settings: CompactionSettings
) -> None:
    sessions = [make_session(extras=False) for _ in range(6)]
    errors: list[BaseException] = []

    def work(s: Session) -> None:
        try:
            archive_session(s.request(), s3_settings, "", open_store(s3_settings))
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(s,)) for s in sessions]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    store = open_store(s3_settings)
    assert [e.seq for e in store.entries()] == list(range(6))
    assert verify(store) == (6, None)


def test_failed_upload_leaves_no_key(
    make_session: Callable[..., Session], s3_settings: CompactionSettings
) -> None:
    store: Any = open_store(s3_settings)
    real = store.client.upload_fileobj

    def broken_upload(body: Any, bucket: str, key: str) -> None:
        raise ConnectionError("simulated crash mid-upload")

    store.client.upload_fileobj = broken_upload
    with pytest.raises(ArchiveError, match="simulated crash"):
        archive_session(make_session().request(), s3_settings, "", store)
    store.client.upload_fileobj = real
    listed = store.client.list_objects_v2(Bucket=BUCKET, Prefix=store.prefix)
    assert listed.get("KeyCount", 0) == 0
    assert verify(store) == (0, None)


def test_missing_bucket_is_an_archive_error(
    make_session: Callable[..., Session], s3_settings: CompactionSettings
) -> None:
    settings = s3_settings.model_copy(update={"bucket": "no-such-bucket"})
    with pytest.raises(ArchiveError, match="no-such-bucket"):
        archive_session(make_session().request(), settings, "", open_store(settings))


def test_bucket_is_required() -> None:
    with pytest.raises(ConfigError, match=r"compaction\.bucket"):
        open_store(CompactionSettings(store="s3"))


def test_checkpoint_beside_the_chain(
    make_session: Callable[..., Session], s3_settings: CompactionSettings
) -> None:
    store: Any = open_store(s3_settings)
    ms = [archive_session(make_session(jsonl({"n": i}), extras=False).request(), s3_settings,
                          "", store, keys=KEY) for i in range(3)]
    checkpoint = store.read_checkpoint()
    assert checkpoint["count"] == 3 and checkpoint["head"] == ms[2]["hash"]
    assert checkpoint["key_id"] == KEY.signing.id
    assert verify(store, KEY) == (3, None)
    store.client.delete_object(Bucket=BUCKET, Key=store.prefix + chain_key(2))
    store.client.delete_object(Bucket=BUCKET, Key=store.prefix + manifest_key(ms[2]["hash"]))
    _, broken = verify(store, KEY)
    assert broken is not None and broken.position == 3 and broken.reason.startswith("missing")


def test_a_forged_manifest_fails_its_mac(
    make_session: Callable[..., Session], s3_settings: CompactionSettings
) -> None:
    store: Any = open_store(s3_settings)
    ms = [archive_session(make_session(jsonl({"n": i}), extras=False).request(), s3_settings,
                          "", store, keys=KEY) for i in range(2)]
    body = {k: v for k, v in ms[1].items() if k not in ("hash", "prev_hash", "mac")}
    forged = link({**body, "trigger": "auto"}, ms[1]["prev_hash"])
    store.client.put_object(Bucket=BUCKET, Key=store.prefix + manifest_key(forged["hash"]),
                            Body=canonical_json(forged))
    store.client.put_object(Bucket=BUCKET, Key=store.prefix + chain_key(1), Body=forged["hash"])
    _, broken = verify(store, KEY)
    assert broken is not None and broken.position == 2 and "no MAC" in broken.reason


def test_object_lock_keeps_what_a_deletion_or_a_replay_hides(
    make_session: Callable[..., Session], s3_settings: CompactionSettings
) -> None:
    settings = s3_settings.model_copy(update={"bucket": "locked", "object_lock_days": 1})
    store: Any = open_store(settings)
    with contextlib.suppress(store.client.exceptions.BucketAlreadyOwnedByYou):
        store.client.create_bucket(Bucket="locked", ObjectLockEnabledForBucket=True)
    ms = [archive_session(make_session(jsonl({"n": i}), extras=False).request(), settings,
                          "", store, keys=KEY) for i in range(3)]
    assert verify(store, KEY) == (3, None)
    key = store.prefix + chain_key(2)
    head = store.client.head_object(Bucket="locked", Key=key)
    assert head["ObjectLockMode"] == "GOVERNANCE"
    version, until = head["VersionId"], head["ObjectLockRetainUntilDate"]
    with pytest.raises(ClientError):  # the locked version itself cannot go
        store.client.delete_object(Bucket="locked", Key=key, VersionId=version)
    # A replayed older checkpoint is only a newer version over the history...
    old = store.client.list_object_versions(
        Bucket="locked", Prefix=store.prefix + "checkpoint.json"
    )["Versions"]
    second = old[1]  # listed newest first: checkpoint #2
    body = store.client.get_object(Bucket="locked", Key=store.prefix + "checkpoint.json",
                                   VersionId=second["VersionId"])["Body"].read()
    # ...and deleting the newest archive only adds delete markers: the exact replay (chain and
    # checkpoint agree again) that nothing in the current view can show.
    store.client.delete_object(Bucket="locked", Key=key)
    store.client.delete_object(Bucket="locked", Key=store.prefix + manifest_key(ms[2]["hash"]))
    store.client.put_object(Bucket="locked", Key=store.prefix + "checkpoint.json", Body=body,
                            ObjectLockMode="GOVERNANCE",
                            ObjectLockRetainUntilDate=until)
    report = verify_store(store, KEY)
    assert report.broken is not None and report.broken.position == 3
    assert "checkpoint rolled back" in report.broken.reason or "delete marker" in (
        report.broken.reason
    )
    found = {b.reason.split(" (")[0].split(":")[0] for b in version_breaks(store)}
    assert found == {"chain entry deleted", "checkpoint rolled back"}
