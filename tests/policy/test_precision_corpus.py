"""The benign precision corpus, replayed: ordinary commands must not be blocked.

Under the platform policy (tests/fixtures/precision/platform-policy.yaml) with `sandbox:
required`, at most 1% of each corpus may be denied or asked (DESIGN.md's budget). With the
sandbox `off` the hook alone decides; that figure must not rise above the ceiling measured when
the corpus was built (lower it as precision improves). The corpora and how they were made:
tests/fixtures/precision/README.md; the full breakdown of causes:
`python tests/benchmarks/bench_precision.py`.
"""

from __future__ import annotations

import subprocess

import pytest

from tests.fixtures.precision.build_tldr import instantiate
from tests.fixtures.precision.named import named
from tests.fixtures.precision.replay import (
    MODES,
    Entry,
    Summary,
    cause,
    load_corpus,
    replay,
    supports_sandbox,
)

REQUIRED_BUDGET = 0.01
OFF_CEILING = {"tldr": 0.006, "agent": 0.025}
"""Blocked rate with the sandbox off, rounded up from the last measurement (tldr 10/2500 =
0.40%, agent 7/395 = 1.77%; 1.80% and 8.35% when the corpus was built): it may only fall."""
MIN_SIZE = {"tldr": 1000, "agent": 200}


@pytest.fixture(scope="module")
def corpora() -> dict[str, list[Entry]]:
    return {name: load_corpus(name) for name in MIN_SIZE}


@pytest.fixture(scope="module")
def summaries(corpora: dict[str, list[Entry]]) -> dict[tuple[str, str], Summary]:
    modes = MODES if supports_sandbox() else ("off",)
    return replay([e for entries in corpora.values() for e in entries], modes)


def _describe(summary: Summary) -> str:
    causes = "; ".join(f"{n} x {c}" for c, n in summary.causes().most_common(5))
    return (f"{summary.corpus}, sandbox {summary.mode}: {len(summary.blocked)}/{summary.total}"
            f" blocked ({summary.rate:.2%}); top causes: {causes}")


@pytest.mark.parametrize("name", sorted(MIN_SIZE))
def test_corpus_is_large_enough_and_names_nothing_the_policy_names(
        corpora: dict[str, list[Entry]], name: str) -> None:
    entries = corpora[name]
    assert len(entries) >= MIN_SIZE[name]
    assert len({e.command for e in entries}) == len(entries), "duplicate commands"
    named_here = [(e.ident, named(e.command)) for e in entries if named(e.command)]
    assert named_here == []


def test_agent_commands_parse_as_bash(corpora: dict[str, list[Entry]]) -> None:
    bad = [e.ident for e in corpora["agent"]
           if subprocess.run(["bash", "-n", "-c", e.command], capture_output=True,
                             check=False, timeout=10).returncode]
    assert bad == []


@pytest.mark.parametrize("name", sorted(OFF_CEILING))
def test_sandbox_off_does_not_regress(summaries: dict[tuple[str, str], Summary],
                                      name: str) -> None:
    summary = summaries[(name, "off")]
    print(_describe(summary))
    assert summary.rate <= OFF_CEILING[name], _describe(summary)


@pytest.mark.parametrize("name", sorted(MIN_SIZE))
def test_sandbox_required_blocks_at_most_one_percent(
        summaries: dict[tuple[str, str], Summary], name: str) -> None:
    if not supports_sandbox():
        pytest.skip("gateway.policy.explain takes no `sandboxed` keyword yet: the sandbox "
                    "mode is not wired into decisions")
    summary = summaries[(name, "required")]
    print(_describe(summary))
    assert summary.rate <= REQUIRED_BUDGET, _describe(summary)


@pytest.mark.parametrize("command", [
    "rm -rf src", "sudo ls", "curl https://example.com", "git push --force origin main",
    "cat .env", "chmod -R 777 src", "cat ~/.ssh/id_rsa",
])
def test_the_replay_blocks_what_the_policy_names(command: str) -> None:
    """The replay's setup enforces the policy: a blocked rate of 0 is not a silent no-op."""
    assert named(command)
    modes = MODES if supports_sandbox() else ("off",)
    for summary in replay([Entry("probe", "1", command)], modes).values():
        assert [o.kind for o in summary.outcomes] == ["deny"], (summary.mode, command)
        assert cause(summary.outcomes[0])


@pytest.mark.parametrize(("original", "command"), [
    ("tar czf {{path/to/target.tar.gz}} {{[-C|--directory]}} {{path/to/directory}} .",
     "tar czf target.tar.gz -C src ."),
    ("rm {{[-r|--recursive]}} {{path/to/file_or_directory1 path/to/file_or_directory2 ...}}",
     "rm -r notes.txt todo.txt"),
    ("tar xf {{path/to/source.tar[.gz|.bz2|.xz]}}", "tar xf source.tar.gz"),
    ("find {{path/to/directory}} -type {{f|d}} -name '{{*.ext}}'",
     "find src -type f -name '*.txt'"),
    ("ssh {{username}}@{{remote_host}} -p {{port}}", "ssh alice@server.example.com -p 8080"),
    ("for {{variable}} in {{item1 item2 ...}}; do echo ${{variable}}; done",
     "for variable in item1 item2; do echo $variable; done"),
    ("seq {{1..10}}", "seq 1"),
])
def test_tldr_placeholders_are_filled_as_the_style_guide_defines_them(original: str,
                                                                       command: str) -> None:
    assert instantiate(original) == command


@pytest.mark.parametrize(("command", "why"), [
    ("rm -f *.o", ""),
    ("rm -Rf build", "runs rm recursively"),
    ("find . -name x -exec rm -r {} +", "runs rm recursively"),
    ("echo $(wget -qO- example.com)", "runs wget"),
    ("git -C repo push origin +main", "runs git push --force"),
    ("git push -u origin main", ""),
    ("apt show curl", ""),
    ("cat app/.env", "names .env"),
    ("node -e 'console.log(process.env.HOME)'", ""),
])
def test_the_exclusion_filter(command: str, why: str) -> None:
    assert named(command) == why
