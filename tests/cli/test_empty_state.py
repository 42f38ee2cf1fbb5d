"""On a fresh AGENT_GATEWAY_HOME both trails verify alike: nothing recorded yet, nothing wrong."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path


def test_audit_and_archive_verify_agree_on_an_empty_home(tmp_path: Path) -> None:
    env = {**os.environ, "AGENT_GATEWAY_HOME": str(tmp_path / "fresh")}
    results = [
        subprocess.run([sys.executable, "-m", "gateway", trail, "verify"], env=env,
                       capture_output=True, text=True, timeout=60, check=False)
        for trail in ("audit", "archive")
    ]
    assert [r.returncode for r in results] == [0, 0], [r.stderr for r in results]
    assert results[0].stdout.startswith("audit verify: OK, 0 records in ")
    assert results[1].stdout.startswith("archive verify: OK, 0 archives in ")
