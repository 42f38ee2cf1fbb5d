"""docs/limitations.md: each limitation names the test that shows it, and that test exists;
the README's list is the same list, shorter. Tests for limitations no other module shows."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

from gateway.policy.evaluate import decide
from gateway.policy.loader import load_policy
from gateway.types import ToolCall

ROOT = Path(__file__).resolve().parents[1]
SHOWN_BY = re.compile(r"Shown by `(tests/[\w/]+\.py)::(\w+)`")


def _limitations() -> list[str]:
    text = (ROOT / "docs" / "limitations.md").read_text(encoding="utf-8")
    return ["- " + item for item in text.split("\n- ")[1:]]


def test_every_limitation_names_a_test_that_exists() -> None:
    limitations = _limitations()
    assert len(limitations) > 5
    for item in limitations:
        named = SHOWN_BY.findall(item)
        assert named, f"names no test: {item[:80]}"
        for path, name in named:
            source = (ROOT / path).read_text(encoding="utf-8")
            assert re.search(rf"^(async )?def {name}\(", source, re.M), f"{path}::{name}"


def test_the_readme_lists_no_limitation_the_docs_dropped() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    section = readme.split("## Known limitations", 1)[1].split("\n## ", 1)[0]
    assert "docs/limitations.md" in section
    items = [line for line in section.splitlines() if line.startswith("- ")]
    assert 0 < len(items) <= len(_limitations())
    # lifted: behind serve, turns and subagents nest as in run (tests/e2e/test_trace_parity.py)
    assert "no turn spans" not in readme and "no turn spans" not in "".join(_limitations())


def test_what_git_restores_from_its_history_is_not_checked_against_edit_rules(
        tmp_path: Path) -> None:
    """`git checkout .` rewrites the workflow from a commit: without the OS sandbox the hook
    lets it (a patch's files are checked: `git apply` of the same change is denied)."""
    workflow = tmp_path / ".github" / "workflows" / "ci.yml"
    workflow.parent.mkdir(parents=True)
    workflow.write_text("pwned\n")
    git = "git -c user.name=t -c user.email=t@example.com"
    subprocess.run(["bash", "-c", f"git init -q && git add -A && {git} commit -qm x"],
                   cwd=tmp_path, check=True)
    workflow.write_text("on: push\n")
    (tmp_path / "x.patch").write_text(
        "--- a/.github/workflows/ci.yml\n+++ b/.github/workflows/ci.yml\n"
        "@@ -1 +1 @@\n-on: push\n+pwned\n")
    policy = tmp_path / "org.yaml"
    policy.write_text("version: 1\npermissions:\n  deny: ['Edit(.github/workflows/**)']\n")
    loaded = load_policy([str(policy)])

    def kind(command: str) -> str:
        return decide(loaded, ToolCall("Bash", {"command": command}, cwd=str(tmp_path))).kind

    assert kind("git apply x.patch") == "deny" and kind("patch -p1 < x.patch") == "deny"
    assert kind("git checkout .") != "deny"
    subprocess.run(["bash", "-c", "git checkout -q ."], cwd=tmp_path, check=True)
    assert workflow.read_text() == "pwned\n"


def test_paths_are_compared_as_spelled(tmp_path: Path) -> None:
    """On this (case-sensitive) filesystem `.ENV` is another file than `.env`, and so it is
    to the hook; where the filesystem folds case it would be the same file."""
    (tmp_path / ".env").write_text("KEY=x\n")
    policy = tmp_path / "org.yaml"
    policy.write_text("version: 1\npermissions:\n  deny: ['Read(**/.env)']\n")
    loaded = load_policy([str(policy)])

    def kind(command: str) -> str:
        return decide(loaded, ToolCall("Bash", {"command": command}, cwd=str(tmp_path))).kind

    assert kind("cat .env") == "deny"
    assert kind("cat .ENV") == "abstain"
