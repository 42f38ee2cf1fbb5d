"""The compaction hook's tests use the archive tests' sessions and stores."""

from pathlib import Path

import pytest

from tests.archive.conftest import make_session, projects, settings, store

__all__ = ["make_session", "projects", "settings", "store", "unwritable"]


@pytest.fixture
def unwritable(tmp_path: Path) -> str:
    """A store path that cannot be created (its parent is a file)."""
    blocker = tmp_path / "not-a-dir"
    blocker.write_text("x")
    return str(blocker / "store")
