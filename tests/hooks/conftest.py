"""The compaction hook's tests use the archive tests' sessions and stores."""

from tests.archive.conftest import make_session, projects, settings, store

__all__ = ["make_session", "projects", "settings", "store"]
