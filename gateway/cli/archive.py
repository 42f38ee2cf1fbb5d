"""`agent-gateway archive list|show|export|verify`; the store comes from the policy's
`compaction:` section (default: the local store under AGENT_GATEWAY_HOME)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from gateway.errors import GatewayError

if TYPE_CHECKING:
    from gateway.compaction import CompactionSettings
from gateway.cli.parser import Parser, Subcommands


def add_parser(sub: Subcommands) -> None:
    archive = sub.add_parser("archive", help="transcripts archived before compaction")
    asub = archive.add_subparsers(dest="archive_command", metavar="ACTION", parser_class=Parser)
    asub.required = True
    lst = asub.add_parser("list", help="one archive per line, its id first")
    lst.add_argument("--session", metavar="SESSION", help="only this session's archives")
    show = asub.add_parser("show", help="the manifest, then the transcript")
    show.add_argument("id", help="archive id (`archive list` prints it first; a prefix will do)")
    export = asub.add_parser("export", help="write an archive's files into a directory")
    export.add_argument("id", help="archive id (`archive list` prints it first; a prefix will do)")
    export.add_argument("dir", help="directory to write manifest.json and the files into")
    asub.add_parser("verify", help="check every object's hash and the whole chain")
    for p in (lst, show, export, *asub.choices.values()):
        if not any(a.dest == "policy" for a in p._actions):
            p.add_argument(
                "--policy",
                action="append",
                default=[],
                metavar="PATH",
                help="policy files whose compaction: section names the store",
            )


def run(args: argparse.Namespace) -> int:
    from gateway.archive.commands import (
        archive_export,
        archive_list,
        archive_show,
        archive_verify,
    )

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
    from gateway.compaction import CompactionSettings

    if not policy_paths:
        return CompactionSettings()
    from gateway.policy import load_policy

    settings: CompactionSettings = load_policy(policy_paths).compaction_settings()
    return settings
