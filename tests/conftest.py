import pytest

from tests.helpers import paths
from tests.helpers.bank import write_bank


def pytest_collection_modifyitems(config, items):
    # Tests that start the embedded llama.cpp server are slow: `-m "not slow"` skips them too.
    for item in items:
        if item.get_closest_marker("server") is not None and item.get_closest_marker("slow") is None:
            item.add_marker(pytest.mark.slow)


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
