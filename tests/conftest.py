"""Settings every test starts from."""

from __future__ import annotations

import pytest

from anonkit.history.migrations import MIGRATION_HOOKS
from anonkit.history.publish import PUBLISH_HOOKS
from anonkit.history.secret import SECRET_ENV


@pytest.fixture(autouse=True)
def _no_history_settings(monkeypatch: pytest.MonkeyPatch) -> None:
    """No test sees the developer's history settings, or a crash hook another test set."""
    for name in (SECRET_ENV, "ANONKIT_HISTORY", "ANONKIT_HISTORY_SECRET_FILE"):
        monkeypatch.delenv(name, raising=False)
    PUBLISH_HOOKS.clear()
    MIGRATION_HOOKS.clear()
