"""Append-only, hash-chained JSONL audit log of policy decisions."""

from gateway.audit.log import append_decision, append_record, audit_path, decision_record, verify

__all__ = ["append_decision", "append_record", "audit_path", "decision_record", "verify"]
