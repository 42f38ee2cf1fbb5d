"""`agent-gateway audit list|show|verify` (functions in gateway.audit.commands)."""

from __future__ import annotations

import argparse

from gateway.cli import values
from gateway.cli.parser import Parser, Subcommands


def add_parser(sub: Subcommands) -> None:
    audit = sub.add_parser("audit", help="the decision audit log")
    asub = audit.add_subparsers(dest="audit_command", metavar="ACTION", parser_class=Parser)
    asub.required = True
    lst = asub.add_parser(
        "list",
        help="decisions, oldest first: position, time, decision, tool, rule, session, input",
    )
    lst.add_argument("--session", metavar="SESSION", help="only this session")
    lst.add_argument(
        "--decision", choices=("allow", "deny", "ask", "abstain", "none", "block", "refused"),
        help="only this decision (none: an observed event; block: a compaction blocked; "
        "refused: a request refused before anything ran)"
    )
    lst.add_argument("--rule", metavar="ID", help="only decisions made by this rule id")
    lst.add_argument(
        "--since", metavar="T", help="only since T: an ISO time (2026-05-01T12:00) or an age (2h)"
    )
    show = asub.add_parser("show", help="one record, whole, by its position (1 is the first)")
    show.add_argument("position", type=_position, metavar="N",
                      help="the record's position, as `audit list` prints it (1 is the first)")
    verify = asub.add_parser(
        "verify",
        help="check the chain, numbering, MACs and checkpoint (and an exported copy)",
    )
    verify.add_argument(
        "--against",
        metavar="FILE",
        help="an exported copy (OTLP JSON lines, e.g. the Collector's file exporter): "
        "report what is missing or different on either side",
    )
    for p in (lst, show):
        p.add_argument("--json", action="store_true", help="records as JSON, one per line")
    for p in (lst, show, verify):
        p.add_argument(
            "--log", metavar="PATH", help="audit log (default AGENT_GATEWAY_HOME/audit.jsonl)"
        )


def _position(value: str) -> int:
    return values.number(value, int, "a record number", lambda n: n >= 1, "(1 is the first)")


def run(args: argparse.Namespace) -> int:
    from gateway.audit.commands import audit_list, audit_show, audit_verify

    action: str = args.audit_command
    if action == "list":
        return audit_list(
            args.log,
            session=args.session,
            decision=args.decision,
            rule=args.rule,
            since=args.since,
            as_json=args.json,
        )
    if action == "show":
        return audit_show(args.position, args.log, as_json=args.json)
    return audit_verify(args.log, against=args.against)
