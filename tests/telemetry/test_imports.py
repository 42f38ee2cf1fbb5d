"""What `run` and `serve` load: the terminal renderer (rich) is for `trace show` and the demo
only, never for every run and every serve."""

from __future__ import annotations

import subprocess
import sys

import pytest


@pytest.mark.parametrize("modules", [
    "gateway.cli.main, gateway.cli.run, gateway.cli.serve",
    "gateway.runner.run, gateway.runner.wiring, gateway.runner.tracer",
    "gateway.server.app, gateway.server.tracing, gateway.telemetry.export",
    "gateway.handlers.command, gateway.handlers.decision",
])
def test_rich_is_not_loaded(modules: str) -> None:
    probe = f"import sys, {modules}; print('rich' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                         check=True, timeout=60)
    assert out.stdout.strip() == "False", modules
