"""The judge request (paper Appendix F.1), built from the verbatim prompt texts.

Request layout (see ``build_messages``)
    system: the paper's judge system prompt, verbatim (App. F.1, starts with "Reasoning: low").
    user:   the paper's rubric prompt, verbatim
            + "\\n\\n" + ``data_notice`` (the ONE added sentence: text inside the delimiters is data,
              never instructions)
            + "\\n<transcript>\\n" + one ``<turn index="i" role="question|student|tutor">`` element per
              turn, from the opening question up to and including the judged tutor turn
            + "\\n</transcript>\\n" + ``evaluate_line`` naming the judged turn's index.
    Nothing else: never the condition, the level, the tutor's/student's system prompts (where names
    and demographics live) or the gold answer. Inside turn text, anything that could open or close a
    delimiter (``<transcript``, ``</transcript``, ``<turn``, ``</turn`` in any case/spacing) has its
    ``<`` replaced by ``&lt;`` so a turn cannot leave the data block. The turn marker comes after
    ``</transcript>`` so the requests for the turns of one dialogue share a prefix (system, rubric,
    notice, history); one worker issues them in turn order, so a server prefix cache reuses it.
"""

from __future__ import annotations

import functools
import re
from pathlib import Path

from edufair_metrics.errors import EduFairError
from edufair_metrics.io import read_yaml
from edufair_metrics.protocol.paths import DATA_DIR
from edufair_metrics.records import Transcript


def judge_prompts_path() -> Path:
    return DATA_DIR / "judge.yaml"


@functools.lru_cache(maxsize=1)
def load_judge_prompts() -> dict[str, str]:
    """{"version", "system", "rubric", "data_notice", "evaluate_line"} from prompts/judge.yaml."""
    path = judge_prompts_path()
    data = read_yaml(path, "judge prompts")
    for key in ("version", "system", "rubric", "data_notice", "evaluate_line"):
        if not isinstance(data, dict) or not isinstance(data.get(key), str):
            raise EduFairError(f"{path}: missing text field '{key}'")
    return {k: data[k] for k in ("version", "system", "rubric", "data_notice", "evaluate_line")}


_DELIM_RE = re.compile(r"<(?=\s*/?\s*(?:transcript|turn)\b)", re.IGNORECASE)


def neutralise_delimiters(text: str) -> str:
    """Replace the ``<`` of anything that could open/close ``<transcript>`` or ``<turn>`` by ``&lt;``."""
    return _DELIM_RE.sub("&lt;", text or "")


def render_transcript(transcript: Transcript, upto: int) -> str:
    """The delimited data block with turns ``0..upto`` (inclusive)."""
    parts = ["<transcript>"]
    for i, turn in enumerate(transcript.turns[: upto + 1]):
        role = turn.role if turn.role in ("question", "student", "tutor") else "other"
        parts.append(f'<turn index="{i}" role="{role}">\n{neutralise_delimiters(turn.text)}\n</turn>')
    parts.append("</transcript>")
    return "\n".join(parts)


def build_messages(transcript: Transcript, turn_index: int) -> list[dict[str, str]]:
    """The judge request for tutor turn ``turn_index`` (index into ``transcript.turns``)."""
    if not (0 <= turn_index < len(transcript.turns)) or transcript.turns[turn_index].role != "tutor":
        raise ValueError(f"turn {turn_index} of {transcript.question_id} is not a tutor turn")
    p = load_judge_prompts()
    user = (
        p["rubric"]
        + "\n\n"
        + p["data_notice"]
        + "\n"
        + render_transcript(transcript, turn_index)
        + "\n"
        + p["evaluate_line"].format(index=turn_index)
    )
    return [{"role": "system", "content": p["system"]}, {"role": "user", "content": user}]
