"""PreCompact: archive the transcript before Claude Code compacts it, in every mode.

`archive_before_compact` is what the SDK callback, the command hook and the HTTP hook share;
`run_pre_compact_hook` is the command hook process contract (`agent-gateway hook pre-compact`).
Kept light to import: no aiohttp, no claude_agent_sdk, boto3 only for the S3 store.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TextIO

from gateway.archive.config import CompactionSettings
from gateway.env import hook_log_export_requested
from gateway.errors import GatewayError, HookInputError
from gateway.telemetry import metric_names as M
from gateway.types import CompactRequest

log = logging.getLogger("gateway.archive")

SettingsLoader = Callable[[], tuple[CompactionSettings, str]]
"""Returns the effective `compaction:` settings and the policy bundle hash."""

EXIT_OK = 0
EXIT_BLOCK = 2


@dataclass(frozen=True, slots=True)
class CompactOutcome:
    """What happened before a compaction: archived, skipped, failed, or blocked."""

    archive_id: str = ""
    """Set when an archive was written; the tracer puts it on the compaction span."""
    manifest: Mapping[str, Any] | None = None
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
        return _failed(f"{type(exc).__name__}: {exc}", settings, request)
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


def render_pre_compact(outcome: CompactOutcome) -> dict[str, Any]:
    """PreCompact hook output JSON: Claude Code honours a top-level `decision: block`."""
    if outcome.blocked:
        return {"decision": "block", "reason": outcome.block_reason}
    if outcome.error:
        return {"systemMessage": f"agent-gateway: transcript not archived: {outcome.error}"}
    return {}


def parse_compact_request(data: Mapping[str, Any]) -> CompactRequest:
    """A PreCompact hook input (command stdin or HTTP body) as a CompactRequest."""
    event = data.get("hook_event_name", "PreCompact")
    if event != "PreCompact":
        raise HookInputError(f"hook_event_name is {event!r}, expected 'PreCompact'")
    fields = {}
    for key in ("session_id", "transcript_path", "trigger", "prompt_id", "cwd"):
        value = data.get(key, "")
        if not isinstance(value, str):
            raise HookInputError(f"hook input {key} must be a string, got {value!r}")
        fields[key] = value
    instructions = data.get("custom_instructions")
    if instructions is not None and not isinstance(instructions, str):
        raise HookInputError("hook input custom_instructions must be a string or null")
    if not fields["session_id"] or not fields["transcript_path"]:
        raise HookInputError("hook input needs session_id and transcript_path")
    return CompactRequest(custom_instructions=instructions, raw=dict(data), **fields)


def run_pre_compact_hook(
    stdin: TextIO, stdout: TextIO, stderr: TextIO, settings_loader: SettingsLoader
) -> int:
    """The command hook: exit 0 with JSON on stdout, or exit 2 with one stderr line to block."""
    with _captured_logs() as logged:
        try:
            settings, policy_hash = settings_loader()
        except Exception as exc:
            # No settings means no way to know whether archiving is required: block.
            stderr.write(f"agent-gateway: cannot load compaction settings: {_line(exc)}\n")
            return EXIT_BLOCK
        try:
            raw = json.loads(stdin.read())
            if not isinstance(raw, dict):
                raise HookInputError("hook input must be a JSON object")
            request = parse_compact_request(raw)
        except (ValueError, HookInputError) as exc:
            request = CompactRequest(session_id="?", transcript_path="", trigger="")
            outcome = _failed(f"bad hook input: {_line(exc)}", settings, request)
        else:
            outcome = archive_before_compact(request, settings, policy_hash)
            if outcome.manifest is not None and hook_log_export_requested():
                _export_archive(outcome.manifest, outcome.store)
    json.dump(render_pre_compact(outcome), stdout)
    stdout.write("\n")
    if outcome.blocked:
        stderr.write(outcome.block_reason + "\n")
        return EXIT_BLOCK
    for line in logged:
        stderr.write(line + "\n")
    return EXIT_OK


def _export_archive(manifest: Mapping[str, Any], store: str) -> None:
    from gateway.hooks.command import hook_export

    try:
        export = hook_export()
    except GatewayError as exc:  # the archive is written; its copy is what failed
        log.error("archive log record not exported: %s", exc)
        return
    if export is not None:
        export.archive(manifest, store)
        export.shutdown()


def _line(exc: BaseException) -> str:
    return " ".join(str(exc).split()) or type(exc).__name__


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
