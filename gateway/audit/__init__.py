"""The decision audit log: numbered, hash-chained JSONL records with a checkpoint beside it.

Names are loaded on first use: the command hook imports `gateway.audit.log` alone and must not
pay for verification.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

_WHERE = {
    "FROM_ENV": "gateway.integrity.keys",
    "LogReport": "gateway.audit.verification",
    "append_decision": "gateway.audit.log",
    "append_record": "gateway.audit.log",
    "audit_path": "gateway.audit.log",
    "checkpoint_path": "gateway.audit.log",
    "decision_record": "gateway.audit.record",
    "verify": "gateway.audit.verification",
    "verify_log": "gateway.audit.verification",
}
__all__ = [
    "FROM_ENV",
    "LogReport",
    "append_decision",
    "append_record",
    "audit_path",
    "checkpoint_path",
    "decision_record",
    "verify",
    "verify_log",
]

if TYPE_CHECKING:
    from gateway.audit.log import append_decision, append_record, audit_path, checkpoint_path
    from gateway.audit.record import decision_record
    from gateway.audit.verification import LogReport, verify, verify_log
    from gateway.integrity.keys import FROM_ENV


def __getattr__(name: str) -> Any:
    if name not in _WHERE:
        raise AttributeError(f"module 'gateway.audit' has no attribute {name!r}")
    return getattr(importlib.import_module(_WHERE[name]), name)
