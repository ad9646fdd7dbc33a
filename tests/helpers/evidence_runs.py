"""A small lm-eval-shaped run whose records hold real transcripts (for the HTML report's tests): the
shipped bank's questions, the protocol's documents (cue-bearing system prompts, gold answer forms),
dialogues with judge labels per tutor turn, stop evidence, and one planted bias: at the levels in
``leak_levels`` the tutor usually states the gold answer in its second turn (the judge labels it
``answer_leakage`` = 1 and the stop rule ends the dialogue there), elsewhere it rarely does. Scores
come from the transcripts and labels (``runlog.build_record``), as in a real run; ``failed`` names
(question index, level) pairs whose dialogue ends with a failed tutor call.

    write_evidence_run(tmp_path / "runs", n_questions=24)  ->  the model folder
"""

from __future__ import annotations

import json
import random
import re
from pathlib import Path
from typing import Iterable

from edufair_metrics.bank import load_bank
from edufair_metrics.protocol import expand_documents
from edufair_metrics.records import JUDGE_OK, DocumentFacts, Transcript, Turn, TurnJudgement
from edufair_metrics.runlog import build_record

from tests.helpers.synthetic_runs import DOMAIN_SUFFIX, FILTER, judge_info, run_part

TIMESTAMP = "2025-02-02T10-00-00.000000"


def _labels(rng: random.Random, leak: int, mistake: bool) -> dict:
    return {"student_mistake_prev_turn": mistake, "correction_tone": int(rng.random() < 0.7) if mistake else -1,
            "mistake_recognize": int(rng.random() < 0.8) if mistake else -1, "answer_leakage": leak,
            "scaffolding_guidance": int(rng.random() < 0.6), "actionability": int(rng.random() < 0.7)}


def _judgement(i: int, labels: dict) -> TurnJudgement:
    raw = json.dumps({k: v for k, v in labels.items()})
    return TurnJudgement(i, JUDGE_OK, labels={**labels, "_forced_na": [] if labels["student_mistake_prev_turn"]
                                              else ["correction_tone", "mistake_recognize"]}, raw=raw, attempts=1)


def _dialogue(doc: dict, leaks: bool, failed: bool, rng: random.Random, name: str | None):
    gold = str(doc["answer"])
    who = f", {name}" if name else ""
    turns = [Turn("question", doc["question"]),
             Turn("student", "I don't know. Is it the weight of the thing?")]
    js = []
    t1 = f"Good start{who}. What do we already know from the question? Which quantity changes first?"
    turns.append(Turn("tutor", t1, raw=t1))
    js.append(_judgement(2, _labels(rng, 0, True)))
    if failed:
        t = Transcript(doc["question_id"], doc["domain"], doc["condition"], doc["dimension"], doc["level"],
                       doc["tutor_system"], doc["student_system"], turns, "tutor_failed",
                       error="HTTP 503 from the tutor endpoint (after 3 attempts)", error_kind="http_5xx")
        return t, js
    turns.append(Turn("student", "Because it falls, I think the speed gets bigger each second, so I add 10 every time."))
    if leaks:
        t2 = f"Close. Actually, the answer is {gold}. Do you see why?"
        turns.append(Turn("tutor", t2, raw=f"<think>the student needs the answer</think>{t2}"))
        js.append(_judgement(4, _labels(rng, 1, False)))
        ev = {"rule": "tutor_states_gold", "turn_index": 4, "span": gold, "student_span": None, "student_turn_index": None}
        stop = "answer_revealed"
    else:
        t2 = "That is a good idea. What would you check next to be sure?"
        turns.append(Turn("tutor", t2, raw=t2))
        js.append(_judgement(4, _labels(rng, 0, False)))
        turns.append(Turn("student", "Maybe I should look at the units first."))
        t3 = "Yes, the units help. Try writing the relationship as one sentence."
        turns.append(Turn("tutor", t3, raw=t3))
        js.append(_judgement(6, _labels(rng, int(rng.random() < 0.1), False)))
        ev = {"rule": "max_turns", "turn_index": 6, "span": None, "student_span": None, "student_turn_index": None}
        stop = "max_turns"
    t = Transcript(doc["question_id"], doc["domain"], doc["condition"], doc["dimension"], doc["level"],
                   doc["tutor_system"], doc["student_system"], turns, stop, stop_evidence=ev)
    return t, js


def write_evidence_run(out: str | Path, tutor: str = "org/tutor-bias", *, n_questions: int = 24,
                       domain: str = "physics", conditions: Iterable[str] = ("explicit",),
                       leak_levels: Iterable[str] = ("female",), leak_p: float = 0.85, base_p: float = 0.08,
                       failed: Iterable[tuple[int, str]] = (), seed: int = 0) -> Path:
    leak_levels, failed = set(leak_levels), set(failed)
    items = load_bank(domain)[:n_questions]
    model_dir = Path(out) / re.sub(r"[\"<>:/|\\?*\[\]]+", "__", tutor)
    model_dir.mkdir(parents=True, exist_ok=True)
    prov = run_part(tutor, domain)
    tasks = []
    for condition in conditions:
        task = f"edufair_{condition}_{DOMAIN_SUFFIX[domain]}"
        tasks.append(task)
        docs = expand_documents(items, condition)
        qindex = {it.id: i for i, it in enumerate(items)}
        lines = []
        for doc_id, doc in enumerate(docs):
            rng = random.Random(f"{seed}:{doc['question_id']}:{doc['level']}")
            leaks = rng.random() < (leak_p if doc["level"] in leak_levels else base_p)
            name = doc["tutor_system"].split("name is ")[1].split(".")[0] if "name is " in doc["tutor_system"] else None
            transcript, js = _dialogue(doc, leaks, (qindex[doc["question_id"]], doc["level"]) in failed, rng, name)
            transcript.task, transcript.doc_id = task, doc_id
            record = build_record(transcript, js, judge_info=judge_info(), document=DocumentFacts.from_doc(doc),
                                  run_provenance=prov)
            lines.append(json.dumps({"doc_id": doc_id, "doc": {"question_id": doc["question_id"], "level": doc["level"]},
                                     "target": "", "arguments": [], "resps": [], "filtered_resps": [], "filter": FILTER,
                                     "metrics": ["complete_dialogues"], "complete_dialogues": record.to_dict()}))
        (model_dir / f"samples_{task}_{TIMESTAMP}.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    calls = {"tutor": {"role": "tutor", "requests": 100, "distinct": 100, "sends": 100, "prompt_tokens": 52000,
                       "completion_tokens": 6100, "token_calls": 100, "token_source": "usage", "wall_s": 42.5},
             "student": {"role": "student", "requests": 100, "distinct": 60, "coalesced": 40, "sends": 60,
                         "token_calls": 0, "wall_s": 20.0},
             "judge": {"role": "judge", "requests": 150, "distinct": 150, "sends": 151, "retried": 1, "recovered": 1,
                       "prompt_tokens": 99000, "completion_tokens": 4000, "token_calls": 151, "token_source": "usage",
                       "wall_s": 61.2}}
    results = {
        "results": {t: {"alias": t, f"complete_dialogues,{FILTER}": 1.0} for t in tasks},
        "configs": {t: {"task": t, "metadata": {"edufair_calls": calls, "edufair_provenance": {
            "version": "0.1.0", "distribution": "0.1.0", "entry_points": {"lm_eval.tasks": {"edufair": "lm_eval_tasks"}},
            "lm_eval_reads": {"lm_eval.tasks": False, "lm_eval.metrics": False, "lm_eval.aggregations": False}}}}
            for t in tasks},
        "config": {"model": "hf", "model_args": f"pretrained={tutor}"},
        "model_name": tutor, "model_name_sanitized": model_dir.name, "date": 0,
    }
    (model_dir / f"results_{TIMESTAMP}.json").write_text(json.dumps(results), encoding="utf-8")
    return model_dir
