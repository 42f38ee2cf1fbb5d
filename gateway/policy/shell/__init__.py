"""Bash command analysis: tree-sitter-bash parses, we list the simple commands that would run."""

from gateway.policy.shell.argv import Invocation, analyze
from gateway.policy.shell.scan import Scan, SimpleCommand, scan

__all__ = ["Invocation", "Scan", "SimpleCommand", "analyze", "scan"]
