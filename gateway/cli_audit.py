"""`agent-gateway audit ...`: argv to command functions."""

from __future__ import annotations

import argparse

from gateway.audit.commands import audit_list, audit_show, audit_verify


def dispatch_audit(args: argparse.Namespace) -> int:
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
