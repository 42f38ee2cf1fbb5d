"""Precision benchmark: how many benign commands the platform policy blocks (a script).

    python tests/benchmarks/bench_precision.py [--examples 3] [--top 15] [--corpus tldr]
        [--blocked FILE.jsonl]

Replays the benign corpus (tests/fixtures/precision/: tldr-pages examples and agent-session
commands) through `explain` under tests/fixtures/precision/platform-policy.yaml, in an ordinary
project directory with a temporary HOME, and prints per corpus and sandbox mode: total, denied,
asked, the blocked rate, then the top causes (reason pattern and construct) with the rules blamed
and examples. Modes: `off` always; `required` too once `explain` takes `sandboxed=`.
Budget (DESIGN.md): at most 1% denied or asked under `sandbox: required`.
`--blocked` writes every blocked command with its rule and reason, for study.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from tests.fixtures.precision.replay import (
    CORPORA,
    MODES,
    Summary,
    cause,
    load_corpus,
    replay,
    supports_sandbox,
)


def report(summary: Summary, examples: int, top: int) -> None:
    print(f"\n== {summary.corpus}, sandbox {summary.mode}: {summary.total} commands, "
          f"{summary.count('deny')} denied, {summary.count('ask')} asked, "
          f"{len(summary.blocked)} blocked = {summary.rate:.2%}")
    for rank, (which, count) in enumerate(summary.causes().most_common(top), 1):
        print(f"{rank:>3}. {count:>4}  {which}")
        rules = ", ".join(f"{rule} ({n})" for rule, n in summary.rules(which).most_common(3))
        print(f"           rules: {rules}")
        shown = [o for o in summary.blocked if cause(o) == which][:examples]
        for outcome in shown:
            command = outcome.entry.command.replace("\n", "⏎")
            print(f"           e.g. [{outcome.entry.ident}] {command[:110]}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--corpus", choices=sorted(CORPORA), action="append")
    parser.add_argument("--examples", type=int, default=3)
    parser.add_argument("--top", type=int, default=15)
    parser.add_argument("--blocked", type=Path)
    args = parser.parse_args(argv)
    corpora = args.corpus or sorted(CORPORA, reverse=True)
    entries = [e for name in corpora for e in load_corpus(name)]
    modes = MODES if supports_sandbox() else ("off",)
    if not supports_sandbox():
        print("explain() takes no `sandboxed` keyword yet: sandbox `off` only")
    started = time.perf_counter()
    summaries = replay(entries, modes)
    elapsed = time.perf_counter() - started
    print(f"{len(entries)} commands x {len(modes)} mode(s) decided in {elapsed:.1f} s")
    print("\ncorpus  sandbox   total  denied  asked  blocked")
    for (corpus, mode), summary in summaries.items():
        print(f"{corpus:<7} {mode:<8} {summary.total:>6} {summary.count('deny'):>7} "
              f"{summary.count('ask'):>6}  {summary.rate:>6.2%}")
    everything = {mode: Summary("all", mode) for mode in modes}
    for (_, mode), summary in summaries.items():
        everything[mode].outcomes.extend(summary.outcomes)
    totals = list(everything.values()) if len(corpora) > 1 else []
    for summary in [*summaries.values(), *totals]:
        report(summary, args.examples, args.top)
    if args.blocked:
        with args.blocked.open("w", encoding="utf-8") as out:
            for summary in summaries.values():
                for o in summary.blocked:
                    out.write(json.dumps({
                        "corpus": o.entry.corpus, "id": o.entry.ident, "mode": summary.mode,
                        "command": o.entry.command, "decision": o.kind, "rule": o.rule,
                        "cause": cause(o), "reason": o.reason, "matched": o.matched}) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
