"""`agent-gateway audit list|show|verify`: each returns an exit status and prints one-line
errors (never a traceback): 0 fine, 1 the check failed (or the log is damaged), 2 the input
could not be used. Output into a closed pipe (`audit list | head -1`) ends quietly."""

from __future__ import annotations

import json
import os
import re
import sys
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, TextIO

from gateway.audit.log import audit_path
from gateway.audit.verification import LogReport, read_log, verify_log
from gateway.errors import EXIT_FAILED, EXIT_OK, EXIT_USAGE, ConfigError, GatewayError, one_line
from gateway.integrity.checkpoint import checkpoint_summary
from gateway.types import JSON

SUMMARY_CHARS = 100
_RELATIVE = re.compile(r"^(\d+)\s*([smhdw])$")
_UNITS = {"s": "seconds", "m": "minutes", "h": "hours", "d": "days", "w": "weeks"}
_INPUT_FIELDS = ("command", "file_path", "notebook_path", "path", "url", "pattern", "query")


def audit_list(
    log: str | None = None,
    *,
    session: str | None = None,
    decision: str | None = None,
    rule: str | None = None,
    since: str | None = None,
    as_json: bool = False,
    now: datetime | None = None,
    out: TextIO | None = None,
    err: TextIO | None = None,
) -> int:
    """One decision per line, oldest first: position, time, decision, tool, rule, session,
    and the input decided (`--json`: the records as stored, one per line)."""
    out, err = out or sys.stdout, err or sys.stderr
    try:
        cutoff = parse_since(since, now or datetime.now(UTC)) if since else None
        target = _log_path(log)
        records, damaged, *_ = read_log(target)
    except GatewayError as exc:
        return _unusable("audit list", exc, err)
    except OSError as exc:
        return _unusable("audit list", exc, err)
    with _quiet_pipe(out) as write:
        for position, record in enumerate(records, start=1):
            if not _selected(record, session, decision, rule, cutoff):
                continue
            write(json.dumps(record, sort_keys=True, ensure_ascii=False) if as_json
                  else list_line(position, record))
    if damaged is not None:
        err.write(f"audit list: {target}: stopped at {damaged} (run `audit verify`)\n")
        return EXIT_FAILED
    return EXIT_OK


def audit_show(
    position: int,
    log: str | None = None,
    *,
    as_json: bool = False,
    out: TextIO | None = None,
    err: TextIO | None = None,
) -> int:
    """The record at a 1-based position, whole: indented JSON (`--json`: one line)."""
    out, err = out or sys.stdout, err or sys.stderr
    try:
        target = _log_path(log)
        records, damaged, *_ = read_log(target)
    except (GatewayError, OSError) as exc:
        return _unusable("audit show", exc, err)
    if not 1 <= position <= len(records):
        why = f" (the log is damaged at {damaged})" if damaged else ""
        err.write(f"audit show: no record {position} in {target}: it holds "
                  f"{len(records)}{why}\n")
        return EXIT_USAGE
    record = records[position - 1]
    with _quiet_pipe(out) as write:
        write(json.dumps(record, sort_keys=True, ensure_ascii=False, indent=None if as_json
                         else 2))
    return EXIT_OK


def audit_verify(
    log: str | None = None,
    *,
    against: str | None = None,
    out: TextIO | None = None,
    err: TextIO | None = None,
) -> int:
    """The chain, numbering, MACs and checkpoint; with `against`, the exported copy too."""
    out, err = out or sys.stdout, err or sys.stderr
    try:
        report = verify_log(_log_path(log))
        comparison_lines, comparison_bad = (
            _against(report, Path(against)) if against else ([], False)
        )
    except (GatewayError, OSError) as exc:
        return _unusable("audit verify", exc, err)
    for note in report.notes:
        err.write(f"audit verify: note: {note}\n")
    if report.finding is not None:
        err.write(f"audit verify: FAILED at {report.finding}\n")
    for line in comparison_lines:
        err.write(f"audit verify: against {against}: {line}\n")
    if report.finding is not None or comparison_bad:
        return EXIT_FAILED
    copy = f"; matches {against}" if against else ""
    out.write(
        f"audit verify: OK, {report.count} records in {report.path}"
        f"{checkpoint_summary(report.checkpoint, report.keys)}{copy}\n"
    )
    return EXIT_OK


def _against(report: LogReport, export: Path) -> tuple[list[str], bool]:
    from gateway.audit.against import chains_in, compare, read_exported

    exported, problems = read_exported(export)
    chain = report.chain
    if not chain:
        chains = chains_in(exported)
        if len(chains) > 1:
            listed = ", ".join(f"{c} ({n})" for c, n in sorted(chains.items()))
            raise ConfigError(f"{export} holds several chains ({listed}) and the local log "
                              "names none")
        chain = next(iter(chains), "")
    result = compare(report.records, chain, exported, str(export))
    return [*problems, *result.lines()], bool(problems) or not result.ok


def list_line(position: int, record: Mapping[str, JSON]) -> str:
    flag = " (would deny)" if record.get("would_deny") else ""
    return "  ".join(
        (
            f"{position:>6}",
            str(record.get("time", "?"))[:19] + "Z",
            f"{record.get('decision', '?'):<7}",
            # An event that is no tool call (SessionStart, PreCompact) is named as the event.
            str(record.get("tool") or record.get("event") or "?"),
            str(record.get("rule_id") or "-") + flag,
            str(record.get("session_id") or "-"),
            input_summary(record.get("input") if "input" in record or "event" not in record
                          else record.get("archive_id") or record.get("reason")),
        )
    )


def input_summary(value: Any) -> str:
    """The field an auditor looks for (command, path, URL), else the input as JSON; one line."""
    if isinstance(value, Mapping):
        for key in _INPUT_FIELDS:
            if isinstance(value.get(key), str):
                text = str(value[key])
                break
        else:
            text = json.dumps(value, sort_keys=True, ensure_ascii=False)
    else:
        text = "" if value is None else str(value)
    text = " ".join(text.split())
    return text if len(text) <= SUMMARY_CHARS else text[: SUMMARY_CHARS - 1] + "…"


def parse_since(value: str, now: datetime) -> datetime:
    """`30m`, `2h`, `7d`, `1w` before now, or an ISO date or time (UTC unless it says)."""
    text = value.strip()
    match = _RELATIVE.match(text)
    if match:
        return now - timedelta(**{_UNITS[match.group(2)]: int(match.group(1))})
    try:
        when = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        raise ConfigError(
            f"--since {value!r}: expected an ISO time (2026-05-01, 2026-05-01T12:00) or an age "
            "(30m, 2h, 7d)"
        ) from None
    return when if when.tzinfo else when.replace(tzinfo=UTC)


def _selected(
    record: Mapping[str, JSON],
    session: str | None,
    decision: str | None,
    rule: str | None,
    cutoff: datetime | None,
) -> bool:
    if session is not None and record.get("session_id") != session:
        return False
    if decision is not None and record.get("decision") != decision:
        return False
    if rule is not None and record.get("rule_id") != rule:
        return False
    if cutoff is not None:
        try:
            when = datetime.fromisoformat(str(record.get("time")))
        except ValueError:
            return False
        if (when if when.tzinfo else when.replace(tzinfo=UTC)) < cutoff:
            return False
    return True


def _log_path(log: str | None) -> Path:
    """--log PATH must exist; the default log may not yet (a fresh home holds no records)."""
    if log is None:
        return audit_path()
    path = Path(log)
    if not path.exists():
        raise ConfigError(f"{path}: no such audit log")
    return path


def _unusable(command: str, exc: BaseException, err: TextIO) -> int:
    text = exc.strerror if isinstance(exc, OSError) and exc.strerror else one_line(exc)
    err.write(f"{command}: {text}\n")
    return exc.exit_code if isinstance(exc, GatewayError) else EXIT_USAGE


@contextmanager
def _quiet_pipe(out: TextIO) -> Iterator[Callable[[str], None]]:
    """Lines to `out`; a reader that went away (`| head -1`) ends the output quietly."""

    def write(line: str) -> None:
        out.write(line + "\n")

    try:
        yield write
        out.flush()
    except BrokenPipeError:
        # Point stdout at /dev/null so the interpreter's own flush at exit stays quiet.
        try:
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, out.fileno())
        except (OSError, ValueError):
            pass
