"""PreCompact: archive the transcript before Claude Code compacts it, in every mode.

`answer_pre_compact` (settings, parse, archive, render) is what the SDK callback, the command
hook and the HTTP hook share; `run_pre_compact_hook` is the command hook process contract
(`agent-gateway hook pre-compact`). Kept light to import: no aiohttp, no claude_agent_sdk,
boto3 only for the S3 store.
"""

from __future__ import annotations

import contextlib
import json
import logging
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

from gateway.env import hook_log_export_requested
from gateway.errors import EXIT_BLOCK, EXIT_OK, GatewayError, one_line
from gateway.hookio.parse import RawInput, parse_pre_compact
from gateway.hookio.render import render_block
from gateway.hookio.wire import PreCompactOutput
from gateway.telemetry import metric_names as M
from gateway.types import CompactRequest

if TYPE_CHECKING:
    from gateway.archive.manifest import Manifest
    from gateway.compaction import CompactionSettings
    from gateway.handlers.decision import TrailSink
    from gateway.handlers.trail import AuditExport

log = logging.getLogger("gateway.archive")

SettingsLoader = Callable[[], "tuple[CompactionSettings, str]"]
"""Returns the effective `compaction:` settings and the policy bundle hash."""


@dataclass(frozen=True, slots=True)
class CompactOutcome:
    """What happened before a compaction: archived, skipped, failed, or blocked."""

    archive_id: str = ""
    """Set when an archive was written; the tracer puts it on the compaction span."""
    manifest: Manifest | None = None
    """The archive's manifest, for its log record."""
    store: str = ""
    """Where it was written (a directory or s3://bucket/prefix)."""
    skipped: bool = False
    """Archiving is off in the settings."""
    error: str = ""
    block_reason: str = ""
    """Non-empty when compaction must not proceed (require_archive and the archive failed)."""

    @property
    def outcome(self) -> str:
        """For the compactions metric: archived, failed, blocked or off."""
        if self.blocked:
            return M.ARCHIVE_BLOCKED
        if self.error:
            return M.ARCHIVE_FAILED
        return M.ARCHIVE_OFF if self.skipped else M.ARCHIVED

    @property
    def blocked(self) -> bool:
        return bool(self.block_reason)


def archive_before_compact(
    request: CompactRequest,
    settings: CompactionSettings,
    policy_hash: str,
    *,
    home: Path | None = None,
    projects_root: Path | None = None,
) -> CompactOutcome:
    """Archive the session; never raises. A failure blocks only when require_archive is set."""
    if not settings.archive:
        return CompactOutcome(skipped=True)
    try:
        # Imported here so a disabled archive costs nothing on the hook's path.
        from gateway.archive.archiver import archive_session
        from gateway.archive.store import open_store

        store = open_store(settings, home)
        manifest = archive_session(
            request, settings, policy_hash, store, projects_root=projects_root
        )
    except GatewayError as exc:
        return _failed(str(exc), settings, request)
    except Exception as exc:  # a bug must not crash the agent loop or hide the failure
        return _failed(one_line(exc, typed=True), settings, request)
    return CompactOutcome(archive_id=str(manifest["hash"]), manifest=manifest,
                          store=store.location)


def _failed(error: str, settings: CompactionSettings, request: CompactRequest) -> CompactOutcome:
    error = " ".join(error.split())
    if settings.require_archive:
        reason = f"agent-gateway: compaction blocked: transcript archive failed: {error}"
        log.error("%s (session %s)", reason, request.session_id)
        return CompactOutcome(error=error, block_reason=reason)
    log.error(
        "TRANSCRIPT NOT ARCHIVED before compaction of session %s: %s "
        "(require_archive is off, compaction proceeds)",
        request.session_id,
        error,
    )
    return CompactOutcome(error=error)


def render_pre_compact(outcome: CompactOutcome) -> PreCompactOutput:
    """PreCompact hook output JSON: Claude Code honours a top-level `decision: block`."""
    if outcome.blocked:
        return render_block(outcome.block_reason)
    if outcome.error:
        return {"systemMessage": f"agent-gateway: transcript not archived: {outcome.error}"}
    return {}


@dataclass(frozen=True, slots=True)
class PreCompactAnswer:
    outcome: CompactOutcome
    output: PreCompactOutput
    """The hook output JSON, the same from every vantage point."""


def answer_pre_compact(
    raw: RawInput,
    settings: SettingsLoader,
    *,
    trail: TrailSink | None = None,
    home: Path | None = None,
    projects_root: Path | None = None,
) -> PreCompactAnswer:
    """Load the settings, parse, archive, render: what every vantage point answers a
    PreCompact with. Never raises; blocks whenever the archive is required (or whether it
    is cannot be known) and was not written."""
    try:
        current, policy_hash = settings()
    except Exception as exc:
        # No settings means no way to know whether archiving is required: block.
        return _answer(_blocked(f"cannot load compaction settings: {one_line(exc)}"), True)
    try:
        request = parse_pre_compact(raw)
    except Exception as exc:
        unknown = CompactRequest(session_id="?", transcript_path="", trigger="")
        outcome = _failed(f"bad hook input: {one_line(exc)}", current, unknown)
    else:
        outcome = archive_before_compact(
            request, current, policy_hash, home=home, projects_root=projects_root
        )
        if trail is not None and outcome.manifest is not None:
            try:
                trail.archive(outcome.manifest, outcome.store)
            except Exception:  # the archive is written; its copy never changes the answer
                log.exception("archive log record not exported")
    return _answer(outcome, current.require_archive)


def _blocked(error: str) -> CompactOutcome:
    reason = f"agent-gateway: compaction blocked: {error}"
    log.error("%s", reason)
    return CompactOutcome(error=error, block_reason=reason)


def _answer(outcome: CompactOutcome, required: bool) -> PreCompactAnswer:
    try:
        return PreCompactAnswer(outcome, render_pre_compact(outcome))
    except Exception as exc:
        log.exception("hook output not rendered")
        if not required:
            return PreCompactAnswer(outcome, {})
        blocked = _blocked(f"could not render its answer: {one_line(exc)}")
        return PreCompactAnswer(blocked, render_block(blocked.block_reason))


CompactionSeen = Callable[[dict[str, Any], int, str, str], None]
"""Told of a compaction the hook answered: (hook input, start ns, archive id, error)."""


def run_pre_compact_hook(
    stdin: IO[str] | IO[bytes], stdout: IO[str], stderr: IO[str], settings_loader: SettingsLoader,
    observe: CompactionSeen | None = None,
) -> int:
    """The command hook: exit 0 with JSON on stdout, or exit 2 with one stderr line to block."""
    started = time.time_ns()
    with _captured_logs() as logged:
        try:
            raw = stdin.read()
        except (OSError, ValueError) as exc:
            raw = b""
            logged.append(f"ERROR: hook input not read: {one_line(exc)}")
        trail = _hook_trail() if hook_log_export_requested() else None
        answer = answer_pre_compact(raw, settings_loader, trail=trail)
        if observe is not None and not answer.outcome.blocked:
            with contextlib.suppress(ValueError, RecursionError):
                body = json.loads(raw) if raw else None
                if isinstance(body, dict):
                    observe(body, started, answer.outcome.archive_id, answer.outcome.error)
        if trail is not None:
            try:
                trail.shutdown()  # bounded: the record is sent before the process exits
            except Exception:
                log.exception("archive log record not exported")
    outcome = answer.outcome
    try:
        stdout.write(json.dumps(answer.output) + "\n")
        stdout.flush()
    except (OSError, ValueError) as exc:  # the exit status below still says block or not
        stderr.write(f"agent-gateway: hook output not written: {one_line(exc)}\n")
    if outcome.blocked:
        stderr.write(outcome.block_reason + "\n")
        return EXIT_BLOCK
    for line in logged:
        stderr.write(line + "\n")
    return EXIT_OK


def _hook_trail() -> AuditExport | None:
    from gateway.handlers.trail import audit_export_from_env

    try:
        return audit_export_from_env(hook=True)
    except GatewayError as exc:  # the archive is still written; its copy is what fails
        log.error("archive log record not exported: %s", exc)
        return None


class _ListHandler(logging.Handler):
    def __init__(self, sink: list[str]) -> None:
        super().__init__(logging.WARNING)
        self.sink = sink

    def emit(self, record: logging.LogRecord) -> None:
        self.sink.append(" ".join(f"{record.levelname}: {record.getMessage()}".split()))


@contextmanager
def _captured_logs() -> Iterator[list[str]]:
    # Held back so a blocking exit writes exactly one stderr line; printed otherwise.
    lines: list[str] = []
    handler = _ListHandler(lines)
    logger = logging.getLogger("gateway")
    logger.addHandler(handler)
    saved = logger.propagate
    logger.propagate = False
    try:
        yield lines
    finally:
        logger.removeHandler(handler)
        logger.propagate = saved
