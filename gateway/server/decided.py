"""The decisions this replica enforced at PreToolUse, kept until the call's PostToolUse.

A tool span is emitted at PostToolUse (only then is its duration known), and it must carry
the decision that was enforced, not one made again on a policy that may have been reloaded
in between. Replicas share nothing: the replica that answered the PreToolUse remembers its
decision here; a replica that did not (the load balancer sent the PostToolUse elsewhere, or
this one restarted) knows nothing of it, and the span says so (`unknown`). The decision itself
is in the audit record of the replica that made it, and in that record's off-host copy,
which carries the same span id.

Bounded: calls that never get a PostToolUse (a user rejected an `ask`, the session died)
are forgotten oldest first.
"""

from __future__ import annotations

from gateway.types import Decision

DEFAULT_CAPACITY = 65536
"""Calls remembered at once: at 400 tool calls per second, those of the last ~2.7 minutes."""

_Key = tuple[str, str, str]


class DecidedCalls:
    def __init__(self, capacity: int = DEFAULT_CAPACITY) -> None:
        self._capacity = max(1, capacity)
        self._decisions: dict[_Key, Decision] = {}

    def remember(self, tenant: str, session_id: str, tool_use_id: str, decision: Decision) -> None:
        if not session_id or not tool_use_id:
            return  # no span to put it on
        key = (tenant, session_id, tool_use_id)
        self._decisions.pop(key, None)
        self._decisions[key] = decision
        if len(self._decisions) > self._capacity:
            del self._decisions[next(iter(self._decisions))]  # the oldest (insertion order)

    def recall(self, tenant: str, session_id: str, tool_use_id: str) -> Decision | None:
        """The decision enforced for this call here, once; None when this replica did not
        make it (or has forgotten it)."""
        return self._decisions.pop((tenant, session_id, tool_use_id), None)

    def __len__(self) -> int:
        return len(self._decisions)
