"""`agent-gateway policy check|explain|test|replay` (functions in gateway.policy.commands)."""

from __future__ import annotations

import argparse
import os
import sys

from gateway.cli import values
from gateway.cli.parser import Parser, Subcommands


def add_parser(sub: Subcommands) -> None:
    policy = sub.add_parser(
        "policy", help="check, explain and test policy files",
        description="Policy files are YAML, applied in order org, team, project; a lower file "
        "may only tighten. See docs/policy.md.",
    )
    psub = policy.add_subparsers(dest="policy_command", metavar="ACTION", parser_class=Parser)
    psub.required = True
    _add_check(psub)
    _add_explain(psub)
    _add_test(psub)
    _add_replay(psub)


def _add_check(psub: Subcommands) -> None:
    check = psub.add_parser(
        "check", help="validate policy files (layered in the order given)",
        description="Validate policy files as one layered policy: errors read file:line and "
        "exit 1; rules naming a tool Claude Code does not have are warnings (file:line).",
    )
    check.add_argument("paths", nargs="+", metavar="PATH", help="policy files, org first")


def _add_explain(psub: Subcommands) -> None:
    explain = psub.add_parser(
        "explain", help="show which rule decides a tool call, and why",
        description="Decide one tool call as the hook would and show why: the rule, the simple "
        "commands and files it found, the rules that matched in each layer. Give the call as "
        "--tool with --command, --path or --url, or as a hook input JSON file (--input).",
    )
    explain.add_argument("--policy", action="append", required=True, metavar="PATH",
                         help="policy file; repeat in order org, team, project")
    given = explain.add_mutually_exclusive_group(required=True)
    given.add_argument("--input", metavar="HOOK_INPUT.json",
                       help="a PreToolUse hook input as Claude Code sends it ('-': stdin)")
    given.add_argument("--tool", metavar="NAME",
                       help="the tool called: Bash, Read, Edit, Write, WebFetch, mcp__...")
    explain.add_argument("--command", dest="bash_command", metavar="COMMAND",
                         help="with --tool Bash: the command")
    explain.add_argument("--path", metavar="PATH",
                         help="with a file tool (Read, Edit, Write, ...): the file")
    explain.add_argument("--url", metavar="URL", help="with --tool WebFetch: the URL")
    explain.add_argument("--cwd", metavar="DIR", type=values.directory,
                         help="the session's working directory (default: the current one)")
    explain.add_argument("--hook-only", action="store_true",
                         help="decide as a session without the OS sandbox (with `sandbox: "
                         "required`, sessions wired by the gateway run under it)")


def _add_test(psub: Subcommands) -> None:
    test = psub.add_parser(
        "test", help="run the test cases kept beside policy files",
        description="Run each file's cases (org.yaml -> org.tests.yaml) against it and the "
        "files above it; a failing case is reported as file:line and exit 1.",
    )
    test.add_argument("paths", nargs="+", metavar="PATH", help="policy files, org first")


def _add_replay(psub: Subcommands) -> None:
    replay = psub.add_parser(
        "replay", help="decide recorded tool calls under a policy, without running them",
        description="Decide the tool calls recorded in Claude Code session transcripts "
        "(~/.claude/projects/...), the gateway's audit log or a JSONL file of PreToolUse hook "
        "inputs as the hook would decide them in a session under the policy (with `sandbox: "
        "required`, a sandboxed one); nothing runs and nothing is recorded. Prints a summary "
        "by decision, rule and enforcing layer and, where the sources recorded decisions, what "
        "would change. Exit 0 when every call was decided; 1 for a bad policy or a line or "
        "call that could not be read or decided (named file:line on stderr); 2 when a source "
        "cannot be read.",
        epilog="example: agent-gateway policy replay --policy org.yaml --policy new-team.yaml "
        "~/.claude/projects --jsonl decisions.jsonl",
    )
    replay.add_argument("--policy", action="append", required=True, metavar="PATH",
                        help="policy file; repeat in order org, team, project")
    replay.add_argument("--jsonl", metavar="OUT",
                        help="write one JSON line per decided call: tool_use_id, tool_name, "
                        "decision, rule_id, reason, enforced_by ('-': stdout, the summary then "
                        "goes to stderr)")
    replay.add_argument("--cwd", metavar="DIR", type=values.directory,
                        help="the session directory for calls whose source records none (audit "
                        "logs; default: the current directory)")
    replay.add_argument("--json", action="store_true",
                        help="print the summary as one JSON object")
    replay.add_argument("--hook-only", action="store_true",
                        help="decide as sessions without the OS sandbox (with `sandbox: "
                        "required`, sessions wired by the gateway run under it)")
    replay.add_argument("sources", nargs="+", metavar="SOURCE",
                        help="a transcript, audit log or hook-input JSONL file, a directory "
                        "(every *.jsonl under it), or '-' for stdin; the kind is told from "
                        "the content")


def run(args: argparse.Namespace) -> int:
    from gateway.policy.commands import (
        hook_input_for,
        policy_check,
        policy_explain,
        policy_replay,
        policy_test,
    )

    action: str = args.policy_command
    if action == "check":
        return policy_check(args.paths)
    if action == "explain":
        if args.tool is None:
            if args.bash_command or args.path or args.url:
                return _usage("--command, --path and --url go with --tool, not --input")
            return policy_explain(args.policy, args.input, hook_only=args.hook_only)
        if sum(x is not None for x in (args.bash_command, args.path, args.url)) > 1:
            return _usage("give one of --command, --path or --url")
        hook_input = hook_input_for(args.tool, command=args.bash_command, path=args.path,
                                    url=args.url, cwd=args.cwd or os.getcwd())
        return policy_explain(args.policy, hook_input=hook_input, hook_only=args.hook_only)
    if action == "replay":
        return policy_replay(args.policy, args.sources, jsonl=args.jsonl, cwd=args.cwd,
                             as_json=args.json, hook_only=args.hook_only)
    return policy_test(args.paths)


def _usage(problem: str) -> int:
    print(f"agent-gateway policy explain: error: {problem} "
          "(see agent-gateway policy explain --help)", file=sys.stderr)
    return 2
