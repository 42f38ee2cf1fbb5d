"""Formatters and developer tools, each attack shown by its outcome in a real bash.

The platform policy without the OS sandbox (`Read(**/.env)`, `Edit(.github/workflows/**)`).
A formatter reads what it is given and prints what it cannot parse (`ruff check .env` shows
the secret), and rewrites what it is given and, under a directory, every file it formats
(`ruff format .` rewrites a script under .github/workflows). A developer tool's options name
files it reads and prints or hands on (`pip install -r .env`). The tools run are the ones
installed beside the Python running the tests (ruff and pip are development dependencies).
"""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path

import pytest

from gateway.policy import Policy
from tests.policy.conftest import SECRET
from tests.policy.test_shell_outcomes import _digest
from tests.policy.test_shell_precision import _decide, _run

TOOLS = Path(sys.executable).parent
UNFORMATTED = "import os\nx = {  'a':1 }\n"



@pytest.fixture
def tools(monkeypatch: pytest.MonkeyPatch) -> None:
    """The test environment's ruff, pip and python3 first on the PATH bash gets."""
    for tool in ("ruff", "pip"):
        if shutil.which(tool, path=str(TOOLS)) is None:
            pytest.skip(f"{tool} is not installed beside {sys.executable}: no outcome to show")
    monkeypatch.setenv("PATH", f"{TOOLS}:{os.environ.get('PATH', '/usr/bin:/bin')}")


@pytest.fixture
def workflow_script(project: Path) -> Path:
    """A script the workflows run, as badly formatted as a formatter would fix."""
    folder = project / ".github" / "workflows"
    folder.mkdir(parents=True)
    (folder / "ci.yml").write_text("on: push\n")
    (folder / "gen.py").write_text(UNFORMATTED)
    return folder


@pytest.mark.parametrize("command", [
    "ruff check .env", "ruff format --diff .env", "ruff check --select F821 .env",
    "python3 -m ruff check .env", "pip install --no-index -r .env 2>&1",
    "python3 -m pip install --no-index --requirement .env 2>&1",
])
def test_what_a_formatter_or_installer_is_given_it_reads(
        policy: Policy, project: Path, in_home: Path, tools: None, command: str) -> None:
    assert _decide(policy, command, project) == "deny", command
    assert SECRET in _run(command, project, in_home), command


@pytest.mark.parametrize("command", [
    "ruff format .", "ruff format .github", "ruff check --fix --select F401 .",
    "ruff check --select F401 --fix .github/workflows", "python3 -m ruff format .",
    "ruff format .github/workflows/gen.py",
])
def test_a_formatter_rewrites_what_it_formats_under_a_directory(
        policy: Policy, project: Path, in_home: Path, tools: None, workflow_script: Path,
        command: str) -> None:
    assert _decide(policy, command, project) == "deny", command
    before = _digest(workflow_script)
    _run(command, project, in_home)
    assert _digest(workflow_script) != before, command


@pytest.mark.parametrize("command", [
    "ruff check .", "ruff format --check .", "ruff format --diff .", "ruff format src",
    "ruff check --fix src", "black --check .", "prettier --check .", "prettier --write src",
    "eslint --fix .github/workflows", "pip install --no-index -r requirements.txt",
    'go build -ldflags "-X main.v=$(git describe --always)" ./...',
    'docker run --rm -v "$(pwd)":/app -w /app node:20 npm test',
])
def test_checking_or_formatting_elsewhere_is_not_denied(
        policy: Policy, project: Path, workflow_script: Path, command: str) -> None:
    (project / "requirements.txt").write_text("requests\n")
    assert _decide(policy, command, project) == "abstain", command


def test_formatting_the_whole_tree_is_not_denied_when_it_holds_nothing_protected_it_formats(
        policy: Policy, project: Path, in_home: Path, tools: None, workflow_script: Path) -> None:
    (workflow_script / "gen.py").unlink()  # a YAML workflow: ruff does not format it
    assert _decide(policy, "ruff format .", project) == "abstain"
    before = _digest(workflow_script)
    _run("ruff format .", project, in_home)
    assert _digest(workflow_script) == before


@pytest.mark.parametrize("command", [
    "docker run --rm --env-file .env alpine env",
    "kubectl create secret generic x --from-file=cfg=.env --dry-run=client -o yaml",
    "kubectl create secret generic x --from-file .env --dry-run=client -o yaml",
    "helm template x ./chart --set-file k=.env", "terraform plan -var-file=.env",
    "dig -f .env", "mypy --pretty .env", "pytest .env", "black --diff .env", "prettier .env",
    "prettier --write .github/workflows/ci.yml", "npx prettier --write .github",
    "go test ./... -coverprofile=.github/workflows/ci.yml",
    "pytest --junitxml=.github/workflows/ci.yml",
])
def test_tools_not_installed_here_are_decided_by_what_their_options_name(
        policy: Policy, project: Path, workflow_script: Path, command: str) -> None:
    """Their outcome cannot be shown on this machine (not installed): the decision can."""
    assert _decide(policy, command, project) == "deny", command


def test_a_directory_mounted_into_a_container_is_not_followed(
        policy: Policy, project: Path) -> None:
    """A listed limitation: what the image runs reads what is under the mount, out of sight
    (the command it is given is checked: `alpine cat /app/.env` is denied)."""
    assert _decide(policy, 'docker run --rm -v "$(pwd)":/app some/image', project) == "abstain"
    assert _decide(policy, 'docker run --rm -v "$(pwd)":/app alpine cat /app/.env',
                   project) == "deny"
