"""The CLI tests use the archive tests' sessions."""

from tests.archive.conftest import make_session, projects

__all__ = ["make_session", "projects"]
