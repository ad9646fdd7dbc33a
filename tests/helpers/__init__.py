"""Test helpers (not collected): fake servers and models, the lm-eval CLI wrapper, synthetic runs,
the tiny test bank, and shared paths. Import them as ``from tests.helpers.<module> import ...``."""
