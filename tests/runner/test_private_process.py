"""Gateway processes are not dumpable (their environment and memory are not readable by the
agent, a process of the same user); what they start is, after its exec."""

from __future__ import annotations

import subprocess
import sys

import pytest

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="prctl is Linux's")

PROBE = """
import subprocess, sys
from gateway.runner.private_process import is_private, make_private
before = is_private()
done = make_private()
child = subprocess.run([sys.executable, "-c",
    "from gateway.runner.private_process import is_private; print(is_private())"],
    capture_output=True, text=True, check=True).stdout.strip()
print(before, done, is_private(), child)
"""


def test_a_gateway_process_turns_private_and_its_children_do_not_inherit_it() -> None:
    out = subprocess.run([sys.executable, "-c", PROBE], capture_output=True, text=True,
                         check=True, timeout=60).stdout.split()
    assert out == ["False", "True", "True", "False"]
