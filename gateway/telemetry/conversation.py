"""One agent's conversation as the model saw it, rebuilt from Claude Code's stream: pure.

`run` never sees a request, so a chat's input messages are this record of what came before
it (content capture only): the prompt, each response, the tool results and texts sent back,
a background task's notification, and after a compaction its summary followed by what it
kept verbatim (messages are matched by the stream's uuids).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from gateway.telemetry import messages as M
from gateway.telemetry.chat import ChatAccumulator


@dataclass(slots=True)
class Conversation:
    history: list[M.Message] = field(default_factory=list)
    uuids: list[frozenset[str]] = field(default_factory=list)
    """Each history message's uuids in the stream."""
    pending: tuple[ChatAccumulator, set[str]] | None = None
    """The last response, which joins the history before whatever follows it."""
    kept: list[tuple[M.Message, frozenset[str]]] = field(default_factory=list)
    """What a compaction keeps verbatim, placed after its summary message (`anchor`)."""
    anchor: str = ""

    def add(self, message: M.Message, uuids: frozenset[str] = frozenset()) -> None:
        self.history.append(message)
        self.uuids.append(uuids)

    def sent_with(self, response: ChatAccumulator, uuids: set[str]) -> tuple[M.Message, ...]:
        """What the request of a new response sent: the conversation so far."""
        self.flush()
        self.pending = (response, uuids)
        return tuple(self.history)

    def flush(self) -> None:
        """The previous response joins the conversation before what follows it."""
        pending, self.pending = self.pending, None
        if pending is not None:
            response, uuids = pending
            self.add(M.assistant_message(response.output_parts()), frozenset(uuids))

    def user(self, uuid: str, content: Any) -> None:
        """A user message: tool results, or text (a compaction's summary, which the kept
        messages follow)."""
        results = [
            (str(b.get("tool_use_id") or ""), M.tool_result_text(b.get("content")))
            for b in content if isinstance(b, Mapping) and b.get("type") == "tool_result"
        ] if isinstance(content, list) else []
        parts = [] if results else [p for p in M.parts_of(content) if p["type"] == "text"]
        if not results and not parts:
            return
        self.flush()
        message = M.tool_results(results) if results else {"role": "user", "parts": parts}
        self.add(message, frozenset({uuid}))
        if uuid and uuid == self.anchor:
            for kept, uuids in self.kept:
                self.add(kept, uuids)
            self.kept, self.anchor = [], ""

    def compacted(self, keep: Iterable[str], anchor: str) -> None:
        """After a compaction the conversation is its summary, then what it kept verbatim."""
        self.flush()
        keep = set(keep)
        self.kept = [(m, u) for m, u in zip(self.history, self.uuids, strict=True) if u & keep]
        self.anchor = anchor
        self.history, self.uuids = [], []

    def notification(self, text: str) -> None:
        """A background task's end reaches the model as a user message the stream does not
        carry."""
        self.flush()
        self.add(M.user_text(text))
