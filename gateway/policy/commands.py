"""Functions behind `agent-gateway policy ...`.

Each returns an exit status and prints one-line errors (no tracebacks): 0 success, 1 the
check failed (bad policy, failing case), 2 the input could not be used.
"""

from __future__ import annotations

import dataclasses
import json
import os
import sys
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, BinaryIO, TextIO

from gateway.errors import GatewayError, PolicyError

if TYPE_CHECKING:
    from gateway.policy.compiled import Policy
    from gateway.policy.evaluate import Explanation
    from gateway.policy.replay import Source, Tally
    from gateway.policy.shell.scan import Scan
    from gateway.types import Decision, ToolCall


def policy_check(paths: Sequence[str], *, out: TextIO | None = None,
                 err: TextIO | None = None) -> int:
    """Validate the files as layered: an error (file:line) for a tool name that matches
    nothing, a note (file:line) for every rule Claude Code reads with another meaning."""
    from gateway.policy.boundary_notes import COMMAND_RULES_NOTE, boundary_notes
    from gateway.policy.cache import read_files
    from gateway.policy.loader import compile_bundle, parse_file
    from gateway.policy.parity import differences
    from gateway.policy.tool_names import tool_errors

    out, err = out or sys.stdout, err or sys.stderr
    if (unusable := _unreadable(paths)) is not None:
        print(unusable, file=err)
        return 2
    try:
        bundle = read_files(paths)
        files = [parse_file(path, data) for path, data in bundle]
        errors = tool_errors(files)  # all of them, where loading stops at the first
        for error in errors:
            print(error, file=err)
        if errors:
            return 1
        policy = compile_bundle(bundle)
    except GatewayError as exc:
        print(exc, file=err)
        return 1
    notes = differences(files)
    for note in notes:
        print(note, file=err)
    where_held, commands = boundary_notes(files, policy.sandbox == "required")
    for line in where_held:
        print(line, file=err)
    noted = (f", {len(notes)} rule(s) Claude Code reads differently (only the gateway holds "
             "them as written)" if notes else "")
    noted += f"; {COMMAND_RULES_NOTE.format(n=commands)}" if commands else ""
    print(f"ok: {policy.rule_count} rules in {len(policy.file_layers)} file(s), "
          f"bundle sha256:{policy.bundle_hash}{noted}", file=out)
    return 0


def _unreadable(paths: Sequence[str]) -> str | None:
    """A policy file that cannot be used at all (exit 2), as opposed to a bad one (exit 1)."""
    for path in paths:
        if not os.path.isfile(path):
            what = "no such file" if not os.path.exists(path) else "not a file"
            return f"{path}: cannot read policy file: {what}"
    return None


PATH_FIELDS = {"NotebookEdit": "notebook_path", "Glob": "path", "Grep": "path", "LS": "path"}
"""The input field a tool names its file in; `file_path` for the others (Read, Edit, Write)."""


def hook_input_for(tool: str, *, command: str | None = None, path: str | None = None,
                   url: str | None = None, cwd: str = "") -> dict[str, object]:
    """The PreToolUse hook input Claude Code would send for one call, from a few flags."""
    tool_input: dict[str, object] = {}
    if command is not None:
        tool_input["command"] = command
    if path is not None:
        tool_input[PATH_FIELDS.get(tool, "file_path")] = path
    if url is not None:
        tool_input["url"] = url
    return {"hook_event_name": "PreToolUse", "tool_name": tool, "tool_input": tool_input,
            "session_id": "policy-explain", "cwd": cwd}


def policy_explain(policy_paths: Sequence[str], input_path: str | None = None, *,
                   hook_input: dict[str, object] | None = None, out: TextIO | None = None,
                   err: TextIO | None = None, hook_only: bool = False) -> int:
    """Which rule decided, on which simple command, and why. The hook input comes from
    `input_path` (a JSON file, '-' for stdin) or `hook_input` (built by `hook_input_for`).
    With `sandbox: required` the call is decided as in a session under the OS sandbox
    compiled from the policy, unless `hook_only`."""
    from gateway.env import environment
    from gateway.hookio.render import render_pre_tool_use
    from gateway.policy.evaluate import explain

    out, err = out or sys.stdout, err or sys.stderr
    loaded = _explain_inputs(policy_paths, input_path, hook_input, err)
    if isinstance(loaded, int):
        return loaded
    policy, call = loaded
    sandboxed = policy.sandbox == "required" and not hook_only
    # As the hook decides it: in the environment the call would run in, this shell's.
    call = dataclasses.replace(call, environ=environment())
    result = explain(policy, call, sandboxed=sandboxed)
    _print_decision(policy, result.decision, sandboxed, out)
    if result.scan is not None:
        _print_scan(result.scan, result.allow_withheld, out)
    _print_rules(policy, result, out)
    print(f"hook output: {json.dumps(render_pre_tool_use(result.decision))}", file=out)
    return 0


def _explain_inputs(policy_paths: Sequence[str], input_path: str | None,
                    hook_input: dict[str, object] | None, err: TextIO
                    ) -> tuple[Policy, ToolCall] | int:
    """The policy and the call to explain, or the exit code when either cannot be had."""
    from gateway.hookio.parse import parse_pre_tool_use, tool_call_from_input
    from gateway.policy.loader import load_policy

    try:
        policy = load_policy(policy_paths)
        if hook_input is not None:
            return policy, tool_call_from_input(hook_input)
        source = input_path or "-"
        raw = sys.stdin.buffer.read() if source == "-" else Path(source).read_bytes()
        return policy, parse_pre_tool_use(raw)
    except OSError as exc:
        print(f"{input_path}: cannot read hook input: {exc.strerror or exc}", file=err)
        return 2
    except GatewayError as exc:
        print(exc, file=err)
        return 1 if isinstance(exc, PolicyError) else 2


def _print_decision(policy: Policy, decision: Decision, sandboxed: bool, out: TextIO) -> None:
    print(f"decision: {decision.kind}" + (" (monitor: would deny)" if decision.would_deny
                                           else ""), file=out)
    print(f"rule: {decision.rule_id or '(none: no rule matched)'}", file=out)
    if decision.reason:
        print(f"reason: {decision.reason}", file=out)
    if decision.matched:
        print(f"matched: {decision.matched}", file=out)
    print(f"enforced by: {decision.enforced_by}" + (
        " (Claude Code's OS sandbox, compiled from this policy)"
        if decision.enforced_by == "sandbox" else ""), file=out)
    if policy.sandbox == "required":
        print("sandbox: required" + (", decided as a sandboxed session" if sandboxed else
                                     ", decided hook-only (--hook-only)"), file=out)


def _print_scan(scan: Scan, allow_withheld: str, out: TextIO) -> None:
    """The simple commands a Bash command runs and the files they use."""
    print("simple commands:", file=out)
    for command in scan.commands:
        via = f"  (inside {' > '.join(command.via)})" if command.via else ""
        print(f"  - {command.text}{via}", file=out)
    if scan.unparseable:
        print(f"  ! {scan.unparseable}", file=out)
    # One line per use: a path reached twice (through a shell string and directly, or under
    # another cwd spelled the same) is one thing the command does.
    lines = (f"  {a.mode}s{' (possibly)' if a.possible else ''}: {a.path.text}"
             for a in scan.accesses)
    for line in dict.fromkeys(lines):
        print(line, file=out)
    if allow_withheld:
        print(f"allow rules do not apply: {allow_withheld}", file=out)


def _print_rules(policy: Policy, result: Explanation, out: TextIO) -> None:
    """The rules that matched, each layer's outcome and the self-protection rules."""
    print("matching rules:" if result.hits else "matching rules: none", file=out)
    for hit in result.hits:
        mode = " [monitor]" if hit.monitor else ""
        print(f"  - {hit.decision}{mode} {hit.rule_id}: {hit.rule_text}"
              + (f"  <- {hit.matched}" if hit.matched else ""), file=out)
    for hit in result.held:
        print(f"  - left to the sandbox {hit.rule_id}: {hit.rule_text}"
              + (f"  <- {hit.matched}" if hit.matched else ""), file=out)
    for outcome in result.layer_outcomes:
        rule = f" ({outcome.rule_id})" if outcome.rule_id else ""
        print(f"layer {outcome.layer}: {outcome.decision}{rule}", file=out)
    if policy.self_protection:
        ids = sorted({rule.id for rule in policy.builtin_rules})
        print(f"self-protection: on ({', '.join(ids)})", file=out)
    else:
        print("self-protection: OFF (the org policy turned it off)", file=out)


def policy_test(paths: Sequence[str], *, out: TextIO | None = None,
                err: TextIO | None = None) -> int:
    """Run the test cases beside each policy file (org.yaml -> org.tests.yaml)."""
    from gateway.policy.testcases import run_cases, tests_path

    out, err = out or sys.stdout, err or sys.stderr
    if (unusable := _unreadable(paths)) is not None:
        print(unusable, file=err)
        return 2
    try:
        outcomes = run_cases(paths)
    except GatewayError as exc:
        print(exc, file=err)
        return 1
    except OSError as exc:
        print(f"cannot read test cases: {exc}", file=err)
        return 2
    if not outcomes:
        wanted = ", ".join(str(tests_path(p)) for p in paths)
        print(f"no test cases found (looked for {wanted})", file=err)
        return 1
    failed = [o for o in outcomes if o.failure]
    for outcome in failed:
        print(f"{outcome.path}:{outcome.line}: {outcome.name}: {outcome.failure}", file=err)
    print(f"{len(outcomes) - len(failed)} passed, {len(failed)} failed", file=out)
    return 1 if failed else 0


BAD_LINES_SHOWN = 10
"""Bad lines named one by one per source; the rest are counted."""


def policy_replay(policy_paths: Sequence[str], sources: Sequence[str], *,
                  jsonl: str | None = None, cwd: str | None = None, as_json: bool = False,
                  hook_only: bool = False, out: TextIO | None = None,
                  err: TextIO | None = None) -> int:
    """Decide the tool calls recorded in `sources` (transcripts, audit logs, hook inputs;
    files, directories of `*.jsonl`, '-' for stdin) under the policy, without running them:
    with `sandbox: required` as in sandboxed sessions, unless `hook_only`.
    Exit 0 when every call was decided; 1 for a bad policy, or a line or call that could not
    be read or decided; 2 when a source or the `jsonl` output cannot be used."""
    from gateway.policy.loader import load_policy
    from gateway.policy.replay import Source, Tally, source_files

    out, err = out or sys.stdout, err or sys.stderr
    try:
        policy = load_policy(policy_paths)
    except GatewayError as exc:
        print(exc, file=err)
        return 1 if isinstance(exc, PolicyError) else 2
    try:
        files = [name for given in sources for name in source_files(given)]
    except OSError as exc:
        print(f"{exc.filename}: cannot read: {exc.strerror or exc}", file=err)
        return 2
    if not files:
        print(f"no *.jsonl files in {', '.join(sources)}", file=err)
        return 2
    if cwd is not None and not os.path.isdir(cwd):
        print(f"--cwd {cwd}: not a directory", file=err)
        return 2
    directory = os.path.abspath(cwd) if cwd is not None else os.getcwd()
    sandbox: str = policy.sandbox
    if sandbox == "required":
        sandbox += ", decided hook-only (--hook-only)" if hook_only else (
            ", decided as sandboxed sessions")
    tally = Tally(policy.bundle_hash, sandbox)
    seen: set[str] = set()
    reading = ""
    try:
        with _replay_output(jsonl, out) as write:
            for reading in files:
                with _source_stream(reading) as stream:
                    source = Source("<stdin>" if reading == "-" else reading, stream,
                                    directory)
                    _replay_source(policy, source, tally, seen, write, err, hook_only)
    except BrokenPipeError:
        raise  # the reader of stdout went away: the command line ends quietly
    except OSError as exc:
        print(f"{exc.filename or reading}: {exc.strerror or exc}", file=err)
        return 2
    summary = err if jsonl == "-" else out
    if as_json:
        print(json.dumps(tally.as_json(), ensure_ascii=False), file=summary)
    else:
        print("\n".join(tally.text()), file=summary)
    return 0 if tally.complete else 1


def _replay_source(policy: Policy, source: Source, tally: Tally, seen: set[str],
                   write: Callable[[str], None] | None, err: TextIO, hook_only: bool) -> None:
    from gateway.policy.replay import BadLine, NotDecidable, Replayed, jsonl_line, replay

    bad = 0
    for outcome in replay(policy, source, seen, hook_only=hook_only):
        tally.add(outcome)
        if isinstance(outcome, Replayed):
            if write is not None:
                write(jsonl_line(outcome))
        elif isinstance(outcome, BadLine):
            bad += 1
            if bad <= BAD_LINES_SHOWN:
                print(f"{outcome.where}: {outcome.message}", file=err)
        elif isinstance(outcome, NotDecidable):
            print(f"{outcome.where}: not decided: {outcome.reason}", file=err)
    if bad > BAD_LINES_SHOWN:
        print(f"{source.name}: {bad - BAD_LINES_SHOWN} more bad lines", file=err)
    tally.sources[source.kind or "unrecognized"] += 1


@contextmanager
def _source_stream(name: str) -> Iterator[BinaryIO]:
    if name == "-":
        yield sys.stdin.buffer
        return
    with open(name, "rb") as stream:
        yield stream


@contextmanager
def _replay_output(jsonl: str | None, out: TextIO
                   ) -> Iterator[Callable[[str], None] | None]:
    """Where `--jsonl` lines go: a file, stdout ('-'), or nowhere."""
    if jsonl is None:
        yield None
        return
    if jsonl == "-":
        yield lambda line: print(line, file=out)
        return
    path = jsonl
    handle = open(path, "w", encoding="utf-8")  # noqa: SIM115 (closed below, errors named)

    def named(exc: OSError) -> OSError:  # a full disk: say which file
        return OSError(exc.errno, exc.strerror, path)

    def write(line: str) -> None:
        try:
            print(line, file=handle)
        except OSError as exc:
            raise named(exc) from None

    try:
        yield write
    finally:
        try:
            handle.close()
        except OSError as exc:
            raise named(exc) from None
