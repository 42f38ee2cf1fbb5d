"""`agent-gateway hook EVENT`: Claude Code command hooks, local or relayed to a gateway.

Exit 0 with the hook output JSON on stdout, or exit 2 (Claude Code blocks) with one line on
stderr whenever no answer can be had. Never 1, which Claude Code treats as "go ahead".
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from gateway.archive.config import CompactionSettings

EXIT_BLOCK = 2
_EVENT_NAMES = {"pre-tool-use": "PreToolUse", "pre-compact": "PreCompact"}


def run_hook(
    event: str, policy_paths: Sequence[str], remote: str | None = None, timeout_s: float = 10.0
) -> int:
    if remote:
        from gateway.remote_hook import relay

        return relay(
            _EVENT_NAMES[event],
            remote,
            sys.stdin.buffer,
            sys.stdout,
            sys.stderr,
            timeout_s=timeout_s,
        )
    if event == "pre-tool-use":
        from gateway.hook_command import run_pre_tool_use

        return run_pre_tool_use(policy_paths, sys.stdin.buffer, sys.stdout, sys.stderr)
    from gateway.hook_compact import run_pre_compact_hook

    def load_settings() -> tuple[CompactionSettings, str]:
        if not policy_paths:
            from gateway.archive.config import CompactionSettings

            return CompactionSettings(), ""
        from gateway.policy import load_policy

        policy = load_policy(policy_paths)
        settings: CompactionSettings = policy.compaction_settings()
        return settings, policy.bundle_hash

    return run_pre_compact_hook(sys.stdin, sys.stdout, sys.stderr, load_settings)
