"""The viewer's label mode (``edufair view RUN --label``): one page, ``label.html``, that shows the
run's labelling sample (``runlog.labels``) one tutor turn at a time with the dialogue so far, the
cues masked exactly as a condition-blind judge sees them (``protocol.cues.mask_transcript``, what
``runlog.build`` sends the judge with ``mask_cues``), and the judge prompt's questions for the five
metrics (the rubric's own text, ``prompts/judge.yaml``) with yes / no / not applicable.

The page knows an item only by its position in the sample: never its level, condition, question
id or the judge's labels. Its answers go to the local server (``cli/view.py``), which appends them
to ``edufair-labels/labels.jsonl`` (``runlog.labels.append_label``)."""

from __future__ import annotations

import re
from importlib import resources
from typing import Any, Sequence

from edufair_metrics.judge.prompt import load_judge_prompts
from edufair_metrics.protocol.cues import mask_transcript
from edufair_metrics.records import JUDGE_FIELD_FOR_METRIC, PEDAGOGICAL_METRICS, DialogueRecord
from edufair_metrics.report.html.spool import js_json
from edufair_metrics.runlog.labels import HumanLabel, LabelSample

LABEL_PAGE = "label.html"
# the order the questions are asked in: the rubric's (gating question first in the rubric; the two
# gated metrics are answered "not applicable" when the preceding student turn holds no mistake)
QUESTION_ORDER = ("corrective_tone", "mistake_recognize", "answer_leakage", "step_scaffolded", "actionability")


def rubric_questions() -> dict[str, str]:
    """metric -> the rubric's section for its judge field, verbatim (heading line dropped)."""
    rubric = load_judge_prompts()["rubric"]
    sections: dict[str, str] = {}
    for block in re.split(r"\n\s*\n", rubric):
        m = re.match(r"\s*\d+\.\s*(\w+)", block)
        if m:
            sections[m.group(1)] = block.split("\n", 1)[1].strip() if "\n" in block else ""
    return {m: sections.get(JUDGE_FIELD_FOR_METRIC[m], "") for m in PEDAGOGICAL_METRICS}


def label_items(records: Sequence[DialogueRecord], sample: LabelSample) -> list[dict[str, Any]]:
    """Per sample item, the masked dialogue up to and including the turn to label: [[role, text]]."""
    by_key = {f"{r.key[0]}|{r.key[2]}|{r.key[3]}": r for r in records}
    out = []
    for item in sample.items:
        rec = by_key[item.turn_id.rsplit("|", 1)[0]]
        masked = mask_transcript(rec.transcript).transcript
        out.append({"turns": [[t.role, t.text] for t in masked.turns[: item.turn_index + 1]]})
    return out


def label_state(sample: LabelSample, labels: dict[str, HumanLabel]) -> dict[str, dict[str, str]]:
    """The answers given so far, by item position (as written: yes / no / na)."""
    pos = {it.turn_id: k for k, it in enumerate(sample.items)}
    return {str(pos[t]): {m: _answer(v) for m, v in lab.values.items()} for t, lab in labels.items() if t in pos}


def _answer(v: int | None) -> str:
    return "na" if v is None else "yes" if v == 1 else "no"


def render_label_page(tutor: str) -> str:
    assets = resources.files(__package__).joinpath("assets")
    page = assets.joinpath("label.html").read_text(encoding="utf-8")
    js = assets.joinpath("label.js").read_text(encoding="utf-8")
    data = {"metrics": list(QUESTION_ORDER), "questions": rubric_questions()}
    title = f"EduFair labelling: {tutor}".replace("&", "&amp;").replace("<", "&lt;")
    return page.replace("{{TITLE}}", title).replace("/*{{DATA}}*/", f"var LABEL = {js_json(data)};").replace("/*{{JS}}*/", js)


__all__ = ["LABEL_PAGE", "QUESTION_ORDER", "label_items", "label_state", "render_label_page", "rubric_questions"]
