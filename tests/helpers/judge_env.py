"""Every environment variable the judge settings read, from the settings module itself (so a
test that clears them cannot miss a new one)."""

from __future__ import annotations

from edufair_metrics.judge.settings import JUDGE_ENV, JUDGE_KEY_ENV

# EDUFAIR_JUDGE_BASE_URL, _MODEL, ... (settings), the config file, and the API key variables
JUDGE_ENV_VARS = (*JUDGE_ENV, "EDUFAIR_JUDGE_CONFIG", *JUDGE_KEY_ENV)
