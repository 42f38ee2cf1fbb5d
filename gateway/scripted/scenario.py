"""Scenario files: ordered scripted responses, matched per session and by request kind."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from gateway.errors import ConfigError

RequestKind = Literal["prompt", "tool_result", "compaction", "subagent", "any"]
StopReason = Literal["end_turn", "tool_use", "max_tokens", "refusal", "stop_sequence", "pause_turn"]

# Claude Code's compaction request asks the model for a summary of the conversation so far;
# these phrases appear in its final user message on 2.1.x.
_COMPACTION_MARKERS = (
    "create a detailed summary of the conversation",
    "your task is to create a detailed summary",
    "summary of the conversation so far",
)


class ToolUse(BaseModel):
    model_config = ConfigDict(extra="forbid")

    name: str
    input: dict[str, Any] = Field(default_factory=dict)
    id: str | None = None


class Usage(BaseModel):
    model_config = ConfigDict(extra="forbid")

    input_tokens: int = 1200
    output_tokens: int = 42
    cache_read_input_tokens: int = 0
    cache_creation_input_tokens: int = 0
    cache_creation_1h_input_tokens: int = 0
    """Part of cache_creation_input_tokens written with the 1-hour TTL."""


class ScriptedResponse(BaseModel):
    """One scripted answer, or an HTTP error when `status` is set."""

    model_config = ConfigDict(extra="forbid")

    when: RequestKind = "any"
    session: str | None = Field(default=None, description="only for this X-Claude-Code-Session-Id")
    times: int = Field(default=1, ge=0, description="uses per session; 0 means unlimited")
    thinking: str | None = None
    text: str | None = None
    tool_use: list[ToolUse] = Field(default_factory=list)
    stop_reason: StopReason | None = None
    usage: Usage = Field(default_factory=Usage)
    model: str | None = None
    delay_ms: int = Field(default=0, ge=0)
    status: int | None = Field(default=None, ge=400, le=599)
    error_type: str | None = None
    error_message: str = "scripted error"

    @model_validator(mode="after")
    def _has_content(self) -> ScriptedResponse:
        if self.status is None and not (self.text or self.tool_use or self.thinking):
            raise ValueError("a response needs text, tool_use or thinking (or an error status)")
        return self

    @property
    def effective_stop_reason(self) -> str:
        if self.stop_reason:
            return self.stop_reason
        return "tool_use" if self.tool_use else "end_turn"


class Scenario(BaseModel):
    model_config = ConfigDict(extra="forbid")

    model: str = "claude-opus-5-5"
    responses: list[ScriptedResponse] = Field(default_factory=list)
    default: ScriptedResponse | None = Field(
        default_factory=lambda: ScriptedResponse(text="Done.", times=0)
    )
    count_tokens: int = 1000


def load_scenario(source: str | Path | Mapping[str, Any]) -> Scenario:
    """Read a scenario from a YAML file path or a mapping; ConfigError on anything invalid."""
    if isinstance(source, Mapping):
        data: Any = dict(source)
        origin = "scenario"
    else:
        origin = str(source)
        try:
            data = yaml.safe_load(Path(source).read_text(encoding="utf-8"))
        except (OSError, yaml.YAMLError) as exc:
            raise ConfigError(f"{origin}: {exc}".splitlines()[0]) from None
    try:
        return Scenario.model_validate(data or {})
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"])
        raise ConfigError(f"{origin}: {where}: {first['msg']}") from None


def classify_request(body: Mapping[str, Any], headers: Mapping[str, str]) -> RequestKind:
    """What a Messages API request is, as far as scenario matching cares."""
    # Claude Code appends role "system" notes (e.g. the remaining budget) after the turn's
    # user message; the kind is decided by the last message of the conversation proper.
    conversation = [m for m in body.get("messages") or [] if m.get("role") != "system"]
    last = conversation[-1] if conversation else {}
    text = _text_of(last.get("content")).lower()
    if any(marker in text for marker in _COMPACTION_MARKERS):
        return "compaction"
    if _holds_tool_result(last.get("content")):
        return "tool_result"
    if any(k.lower() == "x-claude-code-agent-id" for k in headers):
        return "subagent"
    return "prompt"


def _holds_tool_result(content: Any) -> bool:
    return isinstance(content, list) and any(
        isinstance(b, dict) and b.get("type") == "tool_result" for b in content
    )


def _text_of(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(
            str(b.get("text", ""))
            for b in content
            if isinstance(b, dict) and b.get("type") == "text"
        )
    return ""


class ScenarioCursor:
    """Which scripted responses each session has used; picks the next one for a request."""

    def __init__(self, scenario: Scenario) -> None:
        self._scenario = scenario
        self._used: dict[tuple[str, int], int] = {}

    def next_response(self, session_id: str, kind: RequestKind) -> tuple[int, ScriptedResponse]:
        """Index (-1 for the default) and the response for this request."""
        for index, response in enumerate(self._scenario.responses):
            if response.when not in ("any", kind):
                continue
            if response.session is not None and response.session != session_id:
                continue
            used = self._used.get((session_id, index), 0)
            if response.times and used >= response.times:
                continue
            self._used[(session_id, index)] = used + 1
            return index, response
        if self._scenario.default is None:
            raise LookupError(f"no scripted response left for a {kind} request")
        return -1, self._scenario.default
