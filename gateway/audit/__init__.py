"""The decision audit log: numbered, hash-chained JSONL records with a checkpoint beside it."""

from gateway.audit.log import (
    append_decision,
    append_record,
    audit_path,
    checkpoint_path,
)
from gateway.audit.record import decision_record
from gateway.audit.verify import LogReport, verify, verify_log
from gateway.integrity.keys import FROM_ENV

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
