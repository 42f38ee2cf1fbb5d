"""What makes a hash chain hold against its own writer: MAC keys and checkpoints.

Shared by the audit log and the archive stores; stdlib only, cheap to import (the command
hook pays for every import).
"""
