"""Every policy error names file:line, and no partial policy is ever returned."""

from __future__ import annotations

import pytest

from gateway.errors import PolicyError
from gateway.policy import load_policy

from .conftest import WritePolicy

CASES = [
    ("version: 1\npermissions:\n  deny: [Bash(rm:*)\n", 3, "invalid YAML"),
    ("version: 1\npermissions:\n\tdeny: []\n", 3, "invalid YAML"),
    ("version: 1\nfoo: 1\n", 2, "unknown key 'foo'"),
    ("version: 1\npermissions:\n  deny: []\n  denny: []\n", 4,
     "unknown key 'denny' in permissions"),
    ("version: 1\nrules:\n  - rule: Bash(ls)\n    colour: red\n", 4,
     "unknown key 'colour' in rules[1]"),
    ("version: 1\npermisions:\n  deny: [Bash]\n", 2,
     "unknown key 'permisions' (did you mean 'permissions'?)"),
    ("version: 1\nrules:\n  - {id: a, tool: Bash, comand: 'rm:*'}\n", 3,
     "unknown key 'comand' in rules[1] (did you mean 'command'?)"),
    ("version: 1\ncompaction:\n  requre_archive: true\n", 3,
     "unknown key 'requre_archive' in compaction (did you mean 'require_archive'?)"),
    ("version: 2\n", 1, "version: Input should be 1"),
    ("version: 1\nmode: loud\n", 2, "mode: Input should be 'enforce' or 'monitor'"),
    ("version: 1\npermissions:\n  deny:\n    - Bash(ls)\n    - 'Bash(rm'\n", 5,
     "not a permission rule: 'Bash(rm'"),
    ("version: 1\npermissions:\n  deny:\n    - Bash(\"rm:*)\n", 4, "cannot split Bash pattern"),
    ("version: 1\npermissions:\n  deny: ['WebFetch(example.com)']\n", 3,
     "WebFetch rules take domain:HOST"),
    ("version: 1\nrules:\n  - id: x\n    tool: Bash\n    regex: 'a(b'\n", 5,
     "rules[1].regex: bad regex 'a(b'"),
    ("version: 1\nrules:\n  - id: x\n    reason: r\n", 3,
     "rules[1]: give exactly one of 'rule', 'tool' or 'pipeline'"),
    ("version: 1\nversion: 1\n", 2, "duplicate key 'version'"),
    ("", 1, "the file is empty"),
    ("- a\n- b\n", 1, "the file must be a mapping"),
    ("version: 1\nlimits:\n  max_turns: 0\n", 3, "limits.max_turns: Input should be greater"),
]


@pytest.mark.parametrize(("text", "line", "message"), CASES)
def test_error_names_file_and_line(write_policy: WritePolicy, text: str, line: int,
                                   message: str) -> None:
    path = write_policy(text)
    with pytest.raises(PolicyError) as caught:
        load_policy([path])
    assert str(caught.value).startswith(f"{path}:{line}: {message}"), str(caught.value)
    assert "\n" not in str(caught.value)


def test_unreadable_file(tmp_path: object) -> None:
    with pytest.raises(PolicyError, match=r"missing.yaml: cannot read policy file"):
        load_policy(["/nonexistent/missing.yaml"])


def test_one_bad_file_fails_the_whole_bundle(write_policy: WritePolicy) -> None:
    good = write_policy("version: 1\npermissions:\n  deny: ['Bash(rm:*)']\n", "org.yaml")
    bad = write_policy("version: 1\nbogus: true\n", "team.yaml")
    with pytest.raises(PolicyError, match=r"team\.yaml:2"):
        load_policy([good, bad])
