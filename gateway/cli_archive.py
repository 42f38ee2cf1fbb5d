"""`agent-gateway archive ...`: argv to command functions; the store comes from the
policy's `compaction:` section (default: the local store under AGENT_GATEWAY_HOME)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from gateway.archive.commands import archive_export, archive_list, archive_show, archive_verify
from gateway.archive.config import CompactionSettings
from gateway.errors import GatewayError


def dispatch_archive(args: argparse.Namespace) -> int:
    try:
        settings = _settings(args.policy)
    except GatewayError as exc:
        print(f"agent-gateway archive: {exc}", file=sys.stderr)
        return exc.exit_code
    action: str = args.archive_command
    if action == "list":
        return archive_list(args.session, settings=settings)
    if action == "show":
        return archive_show(args.id, settings=settings)
    if action == "export":
        return archive_export(args.id, Path(args.dir), settings=settings)
    return archive_verify(settings=settings)


def _settings(policy_paths: list[str]) -> CompactionSettings:
    if not policy_paths:
        return CompactionSettings()
    from gateway.policy import load_policy

    settings: CompactionSettings = load_policy(policy_paths).compaction_settings()
    return settings
