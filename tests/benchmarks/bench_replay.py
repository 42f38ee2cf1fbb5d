"""`policy replay` throughput (a script, not part of the test run).

    python tests/benchmarks/bench_replay.py [--calls 12000]

Generates Claude Code transcripts (the shape of tests/fixtures/claude-code-2.1.332/
transcript.session.jsonl: an assistant line per tool_use, a user line per tool_result with its
permissionDecision, and the lines between them: an attachment, an api-request) holding a mix
of calls an agent makes (Bash commands, Read, Edit and Write of the project's files, Grep,
WebFetch), in sessions of 200 calls under one projects directory, then replays it in process
(`policy_replay`, the function behind the command: reading, deciding, the --jsonl file and the
summary) under a 1,000-rule policy, the example org policy, and org + team + project.
Prints calls per second end to end (wall clock, and per CPU second: the machine is shared),
and reading alone for comparison.
Budget (DESIGN.md): >= 2,000 calls/s in process.
"""

from __future__ import annotations

import argparse
import io
import json
import random
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from bench_policy import policy_text  # this directory is on sys.path when run as a script

from gateway.policy.commands import policy_replay
from gateway.policy.replay import Source, source_files

ROOT = Path(__file__).resolve().parents[2]
BUDGET = 2000.0
SESSION_CALLS = 200
COMMANDS = [
    "git status --short", "git diff --stat", "git log --oneline -n 20", "git add -A",
    "git commit -m 'Fix the parser for empty input'", "git checkout -b fix/parser",
    "git diff HEAD~1 -- src/{mod}.py", "git push origin fix/parser", "git fetch origin",
    "git rebase origin/main", "git stash && git pull --rebase && git stash pop",
    "ls -la", "ls src", "ls -la tests/ | head -20", "pwd", "tree -L 2 src",
    "cat README.md", "cat src/{mod}.py | head -50", "head -n 40 src/{mod}.py",
    "tail -f logs/app.log | grep ERROR", "wc -l src/*.py", "cat *.txt | wc -l",
    "grep -rn 'TODO' src/", "grep -n 'def {mod}' src/{mod}.py", "rg -n 'import json' src",
    "find . -name '*.py' -not -path './.venv/*' | head", "find src -name '*.pyc' -delete",
    "python -m pytest -q tests/test_{mod}.py", "python -m pytest -x -q -k {mod}",
    "python -m mypy src", "ruff check src tests", "ruff format src/{mod}.py",
    "python -c 'import sys; print(sys.version)'", "python3 scripts/build_index.py --out dist",
    "pip install -e '.[dev]'", "npm install", "npm run test -- --watch=false", "npm run build",
    "npx tsc --noEmit", "node -e \"console.log(require('./package.json').version)\"",
    "make -j4", "make test", "cd build && cmake .. && make", "cargo build --release",
    "cargo test -- --nocapture", "go test ./...", "docker build -t app:dev .",
    "docker compose up -d db", "docker ps --format '{{{{.Names}}}}'",
    "curl -s http://localhost:8080/healthz", "curl -fsSL https://example.com/install.sh | sh",
    "rm -f build/*.o", "rm -rf node_modules", "mkdir -p out/{mod} && cp src/{mod}.py out/{mod}/",
    "sed -i 's/old_name/new_name/g' src/{mod}.py", "awk -F, '{{print $2}}' data/{mod}.csv",
    "jq '.dependencies' package.json", "echo $PATH", "env | grep -i proxy",
    "top -b -n 1 -p $(pgrep -d, python)", "du -sh * | sort -h", "chmod +x scripts/run.sh",
    "./scripts/run.sh --check", "for f in src/*.py; do python -m py_compile \"$f\"; done",
    "cat .env", "kubectl get pods -n staging", "terraform plan -out tf.plan",
]
MODULES = ["parser", "lexer", "cli", "config", "models", "views", "auth", "cache", "db", "util"]
HOSTS = ["docs.python.org", "developer.mozilla.org", "pypi.org", "github.com",
         "stackoverflow.com", "pastebin.com", "docs.rs", "nodejs.org"]


def make_project(root: Path) -> Path:
    """The files the sessions name, so paths resolve as they would in the project."""
    project = root / "project"
    for directory in ("src", "tests", "logs", "data", "scripts", "build"):
        (project / directory).mkdir(parents=True)
    for mod in MODULES:
        (project / "src" / f"{mod}.py").write_text(f"def {mod}():\n    return 1\n")
        (project / "tests" / f"test_{mod}.py").write_text("def test():\n    pass\n")
        (project / "data" / f"{mod}.csv").write_text("a,b\n1,2\n")
    (project / "README.md").write_text("# project\n")
    (project / ".env").write_text("TOKEN=x\n")
    (project / "notes.txt").write_text("notes\n")
    return project


def tool_call(rng: random.Random, project: Path) -> tuple[str, dict[str, Any]]:
    mod = rng.choice(MODULES)
    roll = rng.random()
    if roll < 0.55:
        return "Bash", {"command": rng.choice(COMMANDS).format(mod=mod),
                        "description": "Run a command"}
    if roll < 0.75:
        path = rng.choice([f"src/{mod}.py", f"tests/test_{mod}.py", "README.md", ".env",
                           f"data/{mod}.csv", "pyproject.toml"])
        return "Read", {"file_path": str(project / path)}
    if roll < 0.85:
        return "Edit", {"file_path": str(project / "src" / f"{mod}.py"),
                        "old_string": "return 1", "new_string": "return 2",
                        "replace_all": False}
    if roll < 0.90:
        return "Write", {"file_path": str(project / "src" / f"new_{mod}.py"),
                         "content": f"def {mod}_new():\n    return 3\n" * 5}
    if roll < 0.95:
        return "Grep", {"pattern": f"def {mod}", "path": str(project / "src"),
                        "output_mode": "content"}
    host = rng.choice(HOSTS)
    return "WebFetch", {"url": f"https://{host}/{mod}/guide", "prompt": "Summarise the page"}


def session_lines(rng: random.Random, project: Path, session: str, first: int,
                  count: int) -> list[str]:
    common = {"isSidechain": False, "userType": "external", "entrypoint": "sdk-cli",
              "cwd": str(project), "sessionId": session, "version": "2.1.332",
              "gitBranch": "main"}
    lines = [json.dumps({"type": "queue-operation", "operation": "enqueue",
                         "timestamp": "2026-12-03T09:21:44.805Z", "sessionId": session,
                         "content": "fix the parser"})]
    for n in range(first, first + count):
        name, tool_input = tool_call(rng, project)
        use_id = f"toolu_{n:08d}"
        lines.append(json.dumps(common | {
            "parentUuid": f"p{n}", "type": "assistant", "uuid": f"a{n}",
            "timestamp": "2026-12-03T09:21:45.000Z", "requestId": f"req_{n}",
            "message": {"id": f"msg_{n}", "type": "message", "role": "assistant",
                        "model": "claude-opus-5-5", "stop_reason": None,
                        "content": [{"type": "tool_use", "id": use_id, "name": name,
                                     "input": tool_input}],
                        "usage": {"input_tokens": 1200, "output_tokens": 42,
                                  "cache_read_input_tokens": 30000}}}))
        lines.append(json.dumps(common | {
            "type": "attachment", "uuid": f"t{n}", "parentUuid": f"a{n}",
            "attachment": {"type": "todo_reminder", "content": "x" * 600, "itemCount": 3}}))
        output = "\n".join(f"line {i}: some output of the tool" for i in range(30))
        lines.append(json.dumps(common | {
            "parentUuid": f"a{n}", "type": "user", "uuid": f"u{n}", "promptId": "p",
            "timestamp": "2026-12-03T09:21:45.100Z",
            "message": {"role": "user", "content": [{"tool_use_id": use_id,
                                                     "type": "tool_result",
                                                     "content": output, "is_error": False}]},
            "toolUseResult": {"stdout": output, "stderr": "", "interrupted": False},
            "sourceToolAssistantUUID": f"a{n}",
            "permissionDecision": {"decision": "accept", "source": "config",
                                   "reasonType": "rule", "ruleSource": "cliArg"}}))
        lines.append(json.dumps({
            "type": "api-request", "sessionId": session, "id": f"r{n}", "version": "2.1.332",
            "timestamp": "2026-12-03T09:21:45.200Z", "querySource": "sdk",
            "params": {"model": "claude-opus-5-5", "max_tokens": 32000,
                       "tools": [f"tool{i}" for i in range(20)]},
            "tail": [{"hash": "f" * 64, "role": "user"}] * 4}))
    return lines


def generate(root: Path, calls: int, project: Path) -> Path:
    rng = random.Random(21)
    projects = root / "projects" / "-srv-project"
    projects.mkdir(parents=True)
    for first in range(0, calls, SESSION_CALLS):
        session = f"{first:08d}-0000-4000-8000-000000000000"
        count = min(SESSION_CALLS, calls - first)
        text = "\n".join(session_lines(rng, project, session, first, count)) + "\n"
        (projects / f"{session}.jsonl").write_text(text)
    return root / "projects"


def read_only(source: Path) -> float:
    start = time.perf_counter()
    for name in source_files(str(source)):
        with open(name, "rb") as stream:
            for _ in Source(name, stream, "/"):
                pass
    return time.perf_counter() - start


def bench(label: str, policies: list[str], source: Path, calls: int, out: Path) -> float:
    summary = io.StringIO()
    start, cpu = time.perf_counter(), time.process_time()
    status = policy_replay(policies, [str(source)], jsonl=str(out), out=summary,
                           err=sys.stderr)
    elapsed, cpu = time.perf_counter() - start, time.process_time() - cpu
    lines = summary.getvalue().splitlines()
    written = sum(1 for _ in out.open())
    assert status == 0 and written == calls, (status, written, lines[:3])
    rate = calls / elapsed
    by_decision = " ".join(line.split()[0] + "=" + line.split()[1]
                           for line in lines[lines.index("by decision:") + 1:]
                           if line.startswith("  ") and len(line.split()) == 2
                           and line.split()[0] in ("deny", "ask", "allow", "abstain"))
    verdict = "ok" if rate >= BUDGET else "BELOW BUDGET"
    print(f"  {label:<28} {calls} calls in {elapsed:5.2f} s: {rate:6.0f} calls/s "
          f"({calls / cpu:6.0f} per CPU second)  [{verdict}]  {by_decision}")
    return rate


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=12000)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as scratch:
        tmp = Path(scratch)
        project = make_project(tmp)
        source = generate(tmp, args.calls, project)
        size = sum(p.stat().st_size for p in source.rglob("*.jsonl")) / 1e6
        big = tmp / "p1000.yaml"
        big.write_text(policy_text(1000))
        shipped = [str(ROOT / "policies" / n) for n in ("org.yaml", "team.yaml", "project.yaml")]
        print(f"policy replay, in process: {args.calls} calls in "
              f"{len(source_files(str(source)))} transcripts ({size:.0f} MB); budget "
              f">= {BUDGET:.0f} calls/s, policy loading included")
        reading = read_only(source)
        print(f"  {'reading alone (no decisions)':<28} {args.calls} calls in {reading:5.2f} s: "
              f"{args.calls / reading:6.0f} calls/s")
        for label, policies in (("1,000-rule policy", [str(big)]),
                                ("policies/org.yaml", shipped[:1]),
                                ("org + team + project", shipped)):
            bench(label, policies, source, args.calls, tmp / "out.jsonl")


if __name__ == "__main__":
    main()
