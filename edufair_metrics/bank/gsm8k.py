"""Mathematics proxy split from GSM8K (shipped because SocraTeach cannot be obtained offline).

SocraTeach's problems are GSM8K/MAWPS problems; its filter keeps problems whose reference
dialogues have >= 4 student-tutor exchanges. Without dialogues, the proxy keeps problems whose
reference solution has at least ``MIN_CALC_STEPS`` calculator annotations ``<<a*b=c>>`` AND at
least ``MIN_SOLUTION_LINES`` non-empty reasoning lines (the ``#### answer`` line excluded), i.e.
problems that need at least four computed steps and so leave room for >= 4 exchanges. The error
criteria of the faithful filter have no proxy. We also drop problems whose gold value already
appears as a number in the question, because the answer detector would then fire as soon as the
tutor restates the problem.

Split: GSM8K ``train`` (7,473 problems). SocraTeach's ~7,973 GSM8K problems are mostly train
problems, so train is the closer proxy, and its multi-step pool (~2,500) leaves room for the
paper's 907; the test split (1,319) has only ~480 after the filters. Up to ``cap`` problems are drawn
with ``random.Random(seed)`` and written in file order.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from edufair_metrics.protocol.matching import mentions_answer
from edufair_metrics.errors import EduFairError
from edufair_metrics.io import iter_jsonl, sha256_file
from edufair_metrics.records import GRADES, BankItem
from edufair_metrics.bank.common import canonical_number, clean_text, item_id, numeric_answer_forms, seeded_sample

SOURCE = "gsm8k-proxy"
DOMAIN = "mathematics"
DEFAULT_SPLIT = "train"
MIN_CALC_STEPS = 4
MIN_SOLUTION_LINES = 4
FUNNEL_STEPS = ("pool", "multistep", "answer_not_in_question", "sampled")
_CALC_RE = re.compile(r"<<[^<>]*>>")


@dataclass
class Gsm8kResult:
    items: list[BankItem]
    stats: dict[str, Any] = field(default_factory=dict)
    source_file: str = ""
    source_sha256: str = ""


def resolve_file(path: str | Path, split: str = DEFAULT_SPLIT) -> Path:
    """A GSM8K folder (uses ``<split>.jsonl``) or a JSONL file."""
    path = Path(path)
    if path.is_dir():
        path = path / f"{split}.jsonl"
    if not path.is_file():
        raise EduFairError(f"GSM8K file not found: {path}")
    return path


def load_gsm8k(path: Path) -> list[tuple[int, dict[str, str]]]:
    """(line number, row) for every problem; a bad line raises naming file and line."""
    rows = []
    for lineno, row in iter_jsonl(path):
        if not isinstance(row, dict) or not isinstance(row.get("question"), str) or not isinstance(row.get("answer"), str):
            raise EduFairError(f"{path}:{lineno}: expected an object with string fields 'question' and 'answer'")
        if "####" not in row["answer"]:
            raise EduFairError(f"{path}:{lineno}: answer has no '#### <number>' final line")
        rows.append((lineno, row))
    return rows


def solution_steps(solution: str) -> tuple[int, int]:
    """(calculator annotations, non-empty reasoning lines before '####')."""
    body = solution.split("####")[0]
    lines = [ln for ln in body.splitlines() if ln.strip()]
    return len(_CALC_RE.findall(body)), len(lines)


def is_multistep(solution: str) -> bool:
    calc, lines = solution_steps(solution)
    return calc >= MIN_CALC_STEPS and lines >= MIN_SOLUTION_LINES


def gold_answer(solution: str, where: str = "") -> str:
    return canonical_number(solution.split("####")[-1], where)


def build_gsm8k(path: str | Path, cap: int | None, seed: int, split: str = DEFAULT_SPLIT) -> Gsm8kResult:
    file = resolve_file(path, split)
    rows = load_gsm8k(file)
    stats: dict[str, Any] = {"pool": len(rows)}
    multistep = [(n, r) for n, r in rows if is_multistep(r["answer"])]
    stats["multistep"] = len(multistep)
    candidates = []
    for lineno, row in multistep:
        answer = gold_answer(row["answer"], f"{file}:{lineno}: ")
        forms = numeric_answer_forms(answer)
        if mentions_answer(row["question"], forms, DOMAIN):
            continue
        candidates.append((lineno, row, answer, forms))
    stats["answer_not_in_question"] = len(candidates)
    chosen = seeded_sample(candidates, cap, seed)
    stats["sampled"] = len(chosen)
    items = [_to_item(split, lineno, row, answer, forms) for lineno, row, answer, forms in chosen]
    return Gsm8kResult(items=items, stats=stats, source_file=str(file), source_sha256=sha256_file(file))


def _to_item(split: str, lineno: int, row: dict[str, str], answer: str, forms: list[str]) -> BankItem:
    question = clean_text(row["question"])
    calc, lines = solution_steps(row["answer"])
    return BankItem(
        id=item_id(DOMAIN, SOURCE, question, answer),
        domain=DOMAIN,
        grade=GRADES[DOMAIN],
        question=question,
        answer=answer,
        answer_forms=forms,
        source=SOURCE,
        meta={
            "gsm8k_split": split,
            "gsm8k_line": lineno,
            "solution": row["answer"],
            "calc_steps": calc,
            "solution_lines": lines,
        },
    )


def parameters(cap: int | None, seed: int, split: str = DEFAULT_SPLIT) -> dict[str, Any]:
    return {
        "split": split,
        "proxy_filter": (
            f"reference solution has >= {MIN_CALC_STEPS} calculator annotations <<...>> and "
            f">= {MIN_SOLUTION_LINES} non-empty lines before '####'"
        ),
        "min_calc_steps": MIN_CALC_STEPS,
        "min_solution_lines": MIN_SOLUTION_LINES,
        "drop_answer_in_question": True,
        "cap": cap,
        "seed": seed,
    }
