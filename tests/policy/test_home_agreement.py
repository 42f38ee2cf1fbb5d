"""`~` means one thing to every command that decides: $HOME of the environment the call runs
in. A CI runner often has HOME differ from the password database's entry; `policy test` took
the latter while the hook took the former, and one call was deny in one and abstain in the
other."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

POLICY = "version: 1\npermissions:\n  deny: ['Read(~/.ssh/**)']\n"


def test_policy_test_the_hook_and_replay_read_tilde_as_home(tmp_path: Path) -> None:
    home = tmp_path / "runner-home"  # not the password database's home of this user
    home.mkdir()
    command = f"python3 -c \"print(open('{home}/.ssh/id_rsa').read())\""
    policy = tmp_path / "org.yaml"
    policy.write_text(POLICY)
    (tmp_path / "org.tests.yaml").write_text(json.dumps({"cases": [
        {"name": "ssh key by its path under HOME", "tool": "Bash",
         "input": {"command": command}, "expect": "deny"}]}))
    env = {**os.environ, "HOME": str(home), "AGENT_GATEWAY_HOME": str(tmp_path / "gw")}

    def gateway(*args: str, stdin: str = "") -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", "gateway", *args], input=stdin,
                              capture_output=True, text=True, env=env)

    tested = gateway("policy", "test", str(policy))
    assert tested.returncode == 0, tested.stdout + tested.stderr
    call = {"hook_event_name": "PreToolUse", "session_id": "s", "tool_use_id": "t1",
            "tool_name": "Bash", "tool_input": {"command": command}, "cwd": str(tmp_path)}
    hooked = gateway("hook", "pre-tool-use", "--policy", str(policy), stdin=json.dumps(call))
    assert '"permissionDecision": "deny"' in hooked.stdout, hooked
    inputs = tmp_path / "inputs.jsonl"
    inputs.write_text(json.dumps(call) + "\n")
    replayed = gateway("policy", "replay", "--policy", str(policy), "--jsonl",
                       str(tmp_path / "out.jsonl"), str(inputs))
    assert replayed.returncode == 0, replayed.stdout + replayed.stderr
    (line,) = (tmp_path / "out.jsonl").read_text().splitlines()
    assert json.loads(line)["decision"] == "deny", line
