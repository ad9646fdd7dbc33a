"""How the task finds the harness LM: the documented ``chat_template`` argument first, the call
stack only without it."""

from __future__ import annotations

import pytest

from edufair_metrics.errors import EduFairError
from edufair_metrics.lmeval.harness import find_harness_lm, harness_seeds


class _LM:
    def apply_chat_template(self, messages, add_generation_prompt=True):
        return "rendered"


def test_chat_template_owner_is_used_without_walking_the_stack(monkeypatch):
    import edufair_metrics.lmeval.harness as harness

    def no_walk():
        raise AssertionError("the call stack was walked although chat_template was given")

    monkeypatch.setattr(harness, "_evaluate_lm_on_stack", no_walk)
    lm = _LM()
    assert find_harness_lm(lm.apply_chat_template) is lm


def test_outside_lm_eval_without_chat_template_is_a_clear_error():
    with pytest.raises(EduFairError, match="must be run by lm_eval.evaluator.evaluate"):
        find_harness_lm(None)


def test_seeds_outside_simple_evaluate_are_empty():
    assert harness_seeds() == {}
