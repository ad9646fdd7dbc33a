import pytest

from tests.helpers import paths
from tests.helpers.bank import write_bank
from tests.helpers.extras import missing_extra


def pytest_collection_modifyitems(config, items):
    for item in items:
        # Tests that start the embedded llama.cpp server are slow: `-m "not slow"` skips them too.
        if item.get_closest_marker("server") is not None and item.get_closest_marker("slow") is None:
            item.add_marker(pytest.mark.slow)
        # A test marked with an optional extra skips, with the reason, where the extra is absent:
        # README command 2 passes on the install README command 1 makes (see README, Development).
        for mark in item.iter_markers():
            reason = missing_extra(mark.name)
            if reason:
                item.add_marker(pytest.mark.skip(reason=reason))
                break


@pytest.fixture(autouse=True)
def _isolated_cache(tmp_path, monkeypatch):
    # Tests never touch the user's cache; each test gets its own.
    monkeypatch.setenv("EDUFAIR_CACHE_DIR", str(tmp_path / "cache"))
    # Keep lm-eval / HF offline in tests.
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_DATASETS_OFFLINE", "1")


@pytest.fixture(scope="session")
def shared_file():
    """``shared_file(*parts)`` -> the path under ``shared/``; skips the test when it is absent."""
    return paths.shared_file


@pytest.fixture
def bank_dir(tmp_path):
    """A two-question physics bank (``tests.helpers.bank.QUESTIONS``)."""
    return write_bank(tmp_path / "bank")
