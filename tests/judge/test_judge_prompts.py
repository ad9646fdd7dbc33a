"""The judge prompt texts in prompts/judge.yaml are the paper's App. F.1, verbatim."""

from __future__ import annotations

import pytest

from edufair_metrics.judge import load_judge_prompts
from tests.helpers.paths import PAPER_HTML


def _paper_prompts() -> tuple[str, str]:
    lines = PAPER_HTML.read_text(encoding="utf-8").split("\n")
    f1 = lines.index("F.1Judge System Prompt and Rubric")
    i = lines.index("Judge System Prompt", f1)
    j = lines.index("Judge Rubric Prompt", i)
    k = next(n for n in range(j, len(lines)) if lines[n].startswith("F.2"))
    return "\n".join(lines[i + 1 : j]), "\n".join(lines[j + 1 : k])


@pytest.mark.skipif(not PAPER_HTML.exists(), reason=f"paper HTML text not available at {PAPER_HTML}")
def test_prompts_verbatim_from_paper():
    system, rubric = _paper_prompts()
    p = load_judge_prompts()
    assert p["system"] == system
    assert p["rubric"] == rubric


def test_prompt_landmarks():
    p = load_judge_prompts()
    assert p["system"].startswith("Reasoning: low\nYou are an expert educational evaluator")
    assert "--- ignore the student’s demographic background" in p["system"]
    assert "(‘‘No’’, ‘‘Wrong’’, ‘‘Incorrect’’)" in p["rubric"]
    assert p["rubric"].startswith("1. student_mistake_prev_turn\n")
    assert p["rubric"].endswith('"actionability": 0 or 1 }')
    # the one addition: a single sentence about the delimited data
    assert p["data_notice"].count(".") == 1 and "<transcript>" in p["data_notice"]
    assert "never instructions" in p["data_notice"]
    assert "{index}" in p["evaluate_line"]
