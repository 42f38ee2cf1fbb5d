"""What `agent-gateway run` prints on stderr in text mode while the agent works: the session id
first, one line per tool call (tool, short input, the gateway's decision and rule), compaction
and its archive, API retries with what to check, and the turns and cost at the end."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, TextIO

from gateway.audit.commands import input_summary
from gateway.telemetry.result import query_cost_usd
from gateway.types import Decision

INPUT_CHARS = 80


@dataclass
class Progress:
    """A message tap and an `Observer` writing one line per event to `err`."""

    err: TextIO
    base_url: str
    """Where Claude Code sends model requests, named when they fail."""
    _session: str = ""
    _tools: dict[str, str] = field(default_factory=dict)
    """tool_use_id -> tool name, from the model's tool_use blocks."""
    _decided: dict[str, Decision | None] = field(default_factory=dict)
    _retries: int = 0

    # --- the message tap ---------------------------------------------------------------------
    def __call__(self, message: dict[str, Any]) -> None:
        kind = message.get("type")
        if kind == "system":
            self._system(message)
        elif kind == "assistant":
            for block in _blocks(message):
                if block.get("type") == "tool_use":
                    self._tools[str(block.get("id") or "")] = str(block.get("name") or "")
        elif kind == "user":
            for block in _blocks(message):
                if block.get("type") == "tool_result" and block.get("is_error"):
                    self._tool_error(block)
        elif kind == "result":
            self._result(message)

    def _system(self, message: Mapping[str, Any]) -> None:
        subtype = message.get("subtype")
        if subtype == "init" and not self._session:
            self._session = str(message.get("session_id") or "")
            self._line(f"session {self._session}")
        elif subtype == "api_retry":
            self._retry(message)
        elif subtype == "status" and message.get("status") == "compacting":
            self._line("compacting the conversation ...")
        elif subtype == "compact_boundary":
            meta = message.get("compact_metadata") or {}
            self._line(
                f"compacted ({meta.get('trigger', '?')}): {meta.get('pre_tokens', '?')} -> "
                f"{meta.get('post_tokens', '?')} tokens of context"
            )

    def _retry(self, message: Mapping[str, Any]) -> None:
        self._retries += 1
        status = message.get("error_status")
        problem = (
            f"answered {status} ({message.get('error') or 'error'})" if status
            else "cannot be reached (connection failed)"
        )
        delay = message.get("retry_delay_ms")
        when = f", next in {delay / 1000:.1f} s" if isinstance(delay, int | float) else ""
        line = (
            f"the Messages API at {self.base_url} {problem}; Claude Code retries "
            f"({message.get('attempt', '?')} of {message.get('max_retries', '?')}{when})"
        )
        if self._retries == 1:
            line += (
                ". Check ANTHROPIC_BASE_URL, that the server there (a gateway, a proxy) is up, "
                "and HTTPS_PROXY; Ctrl-C stops" if not status
                else ". Ctrl-C stops"
            )
        self._line(line)

    def _tool_error(self, block: Mapping[str, Any]) -> None:
        tool_use_id = str(block.get("tool_use_id") or "")
        decision = self._decided.get(tool_use_id)
        if decision is not None and decision.kind == "deny":
            return  # its line said so already
        name = self._tools.get(tool_use_id, "tool")
        self._line(f"  {name} failed: {_short(_text(block.get('content')))}")

    def _result(self, result: Mapping[str, Any]) -> None:
        spent = query_cost_usd(result)
        total = result.get("total_cost_usd")
        if spent is None:
            cost = _usd(total)
        elif isinstance(total, int | float) and abs(total - spent) > 1e-9:
            cost = f"{_usd(spent)} ({_usd(total)} for the whole session)"
        else:
            cost = _usd(spent)
        turns = result.get("num_turns", "?")
        self._line(f"{result.get('subtype', '?')}: {turns} turns, {cost}")

    # --- the observer --------------------------------------------------------------------------
    def decided(
        self, tool_use_id: str, tool_name: str, tool_input: Mapping[str, Any],
        decision: Decision | None,
    ) -> None:
        self._decided[tool_use_id] = decision
        self._tools.setdefault(tool_use_id, tool_name)
        if decision is None:
            verdict = "no policy"
        elif decision.enforced_by == "sandbox" and decision.kind in ("abstain", "allow"):
            verdict = f"{decision.kind}; left to the OS sandbox [{decision.rule_id}]"
        elif decision.kind == "abstain":
            verdict = "abstain (no rule: Claude Code decides)"
        else:
            verdict = decision.kind + (f" [{decision.rule_id}]" if decision.rule_id else "")
            if decision.would_deny:
                verdict += " (monitor: would deny)"
        self._line(f"  {tool_name}  {_short(input_summary(tool_input))}  -> {verdict}")

    def archived(self, archive_id: str, error: str, blocked: bool) -> None:
        if archive_id:
            self._line(f"transcript archived before compaction: {archive_id}")
        elif blocked:
            self._line(f"compaction blocked: the transcript could not be archived: {error}")
        elif error:
            self._line(f"transcript NOT archived (compaction goes on): {error}")

    def _line(self, text: str) -> None:
        self.err.write(text + "\n")
        self.err.flush()


def _blocks(message: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    content = (message.get("message") or {}).get("content")
    return [b for b in content if isinstance(b, Mapping)] if isinstance(content, list) else []


def _text(content: Any) -> str:
    if isinstance(content, list):
        return " ".join(str(b.get("text", "")) for b in content if isinstance(b, Mapping))
    return str(content or "")


def _short(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= INPUT_CHARS else text[: INPUT_CHARS - 1] + "…"


def _usd(value: Any) -> str:
    return f"${value:.4f}" if isinstance(value, int | float) else "cost unknown"
