"""A replay source, read as a stream: which kind it is (told by its content, per file), and
the calls it holds. A line that is not JSON, or not a line of the file's kind, is reported
with its file:line and passed over."""

from __future__ import annotations

import errno
import json
import os
from collections.abc import Iterator, Mapping
from typing import BinaryIO, Literal, Protocol

from gateway.policy.replay.audit_log import AuditLogReader
from gateway.policy.replay.hook_inputs import HookInputsReader
from gateway.policy.replay.items import BadLine, Item
from gateway.policy.replay.lines import MAX_LINE_BYTES, capped_lines
from gateway.policy.replay.transcript import TranscriptReader

SourceKind = Literal["transcript", "audit log", "hook inputs"]
_TRANSCRIPT_KEYS = ("message", "sessionId", "session_id", "uuid")


class Reader(Protocol):
    kind: str

    def feed(self, where: str, line: Mapping[str, object]) -> Iterator[Item]: ...

    def finish(self) -> Iterator[Item]: ...


def kind_of(line: Mapping[str, object]) -> SourceKind | None:
    """An audit record has its position and chain; a transcript line (Claude Code's own, or
    its stream-json output) a `type` and a session or message; a hook input its tool or event
    name (and no `type`)."""
    if "seq" in line and ("hash" in line or "chain" in line):
        return "audit log"
    if isinstance(line.get("type"), str) and any(k in line for k in _TRANSCRIPT_KEYS):
        return "transcript"
    if "tool_name" in line or "hook_event_name" in line:
        return "hook inputs"
    return None


def _reader(kind: SourceKind, cwd: str) -> Reader:
    if kind == "transcript":
        return TranscriptReader(cwd)
    if kind == "audit log":
        return AuditLogReader(cwd)
    return HookInputsReader(cwd)


class Source:
    """One file (or stdin) of JSONL; iterate for its items. `kind` is known once a line has
    told it (None for a file with no line of any kind)."""

    def __init__(self, name: str, stream: BinaryIO, cwd: str) -> None:
        self.name = name
        self.kind: SourceKind | None = None
        self._stream = stream
        self._cwd = cwd

    def __iter__(self) -> Iterator[Item]:
        reader: Reader | None = None
        for number, raw in capped_lines(self._stream):
            where = f"{self.name}:{number}"
            if raw is None:
                yield BadLine(where, f"line longer than {MAX_LINE_BYTES} bytes, skipped")
                continue
            try:
                line = json.loads(raw)
            except ValueError as exc:  # UnicodeDecodeError included
                yield BadLine(where, f"not JSON ({_first_words(exc)})")
                continue
            if not isinstance(line, dict):
                yield BadLine(where, "not a JSON object")
                continue
            kind = kind_of(line)
            if reader is None:
                if kind is None:
                    yield BadLine(where, "not a Claude Code transcript line, an audit record "
                                  "or a hook input")
                    continue
                self.kind = kind
                reader = _reader(kind, self._cwd)
            elif kind != reader.kind:
                found = f"a line of {kind}" if kind else "a line of no known kind"
                yield BadLine(where, f"{found} in a file of {reader.kind}")
                continue
            yield from reader.feed(where, line)
        if reader is not None:
            yield from reader.finish()


def _first_words(exc: ValueError) -> str:
    return " ".join(str(exc).split())[:120]


def source_files(given: str) -> list[str]:
    """The files a SOURCE argument names: the file itself, or every `*.jsonl` under a
    directory (`~/.claude/projects`: each session's transcript and its subagents'), in name
    order; `-` is stdin. OSError when it names nothing readable."""
    if given == "-" or not os.path.isdir(given):
        if given != "-" and not os.path.exists(given):
            raise FileNotFoundError(errno.ENOENT, os.strerror(errno.ENOENT), given)
        return [given]
    found = [os.path.join(root, name)
             for root, dirs, names in os.walk(given, onerror=_raise)
             for name in names if name.endswith(".jsonl")]
    return sorted(found)


def _raise(exc: OSError) -> None:
    raise exc
