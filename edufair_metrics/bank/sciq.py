"""Physics and chemistry from SciQ (paper §3.1.2, Appendix E).

Pipeline over the SciQ train split (11,679 items, the paper's pool):

1. quality filter: drop empty support passages and definitional questions (question starting
   with "what is" / "what are", case-insensitive); drop exact repeats of (question, answer);
2. weak labels from the Appendix E keyword lists, matched case-insensitively as whole words with
   an optional plural "s" in question + " " + support. The domain with the most keyword hits is
   the label; an item with no hit, or a tie between domains for the most hits, gets no weak label
   and is left out of training (ambiguous seeds would teach the classifier noise);
3. TF-IDF (max_features=5000, English stop words, ngrams (1,2)) fitted on the whole filtered
   pool (unsupervised, so fitting on the items we relabel leaks no labels), logistic regression
   (newton-cg, tol 1e-10: the exact optimum) trained on the weakly labelled items;
4. every filtered item is relabelled; keep physics/chemistry items whose predicted-class
   probability is >= 0.65;
5. up to ``per_domain`` items per domain are drawn with ``random.Random(seed)`` and written in
   SciQ order. Everything is deterministic, so a rebuild is byte-for-byte identical.
"""

from __future__ import annotations

import re
import zipfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from edufair_metrics.errors import EduFairError
from edufair_metrics.io import parse_json, sha256_file
from edufair_metrics.records import GRADES, BankItem
from edufair_metrics.bank.common import clean_text, item_id, seeded_sample, text_answer_forms

SOURCE = "sciq"
HUB_ID = "allenai/sciq"
KEYWORDS: dict[str, tuple[str, ...]] = {
    "physics": ("force", "motion", "velocity", "acceleration", "gravity"),
    "chemistry": ("molecule", "reaction", "acid", "solution"),
    "biology": ("cell", "dna", "organism", "species"),
}
CLASSES = tuple(KEYWORDS)  # fixed class order for the classifier
KEPT_DOMAINS = ("physics", "chemistry")
DEFINITIONAL_PREFIXES = ("what is", "what are")
CONFIDENCE_MIN = 0.65
TFIDF_PARAMS = {"max_features": 5000, "stop_words": "english", "ngram_range": (1, 2)}
# newton-cg with a tight tolerance lands on the (unique, L2-regularised) optimum to ~1e-10, so
# the probabilities do not depend on solver/BLAS/sklearn version details the way lbfgs's
# default tol=1e-4 stopping point does (that one is ~0.009 off): rebuilds stay byte-identical.
LOGREG_PARAMS = {"solver": "newton-cg", "tol": 1e-10, "max_iter": 1000, "random_state": 0}
_REQUIRED = ("question", "correct_answer", "support", "distractor1", "distractor2", "distractor3")
_KEYWORD_RE = {d: re.compile(r"\b(?:%s)s?\b" % "|".join(ws)) for d, ws in KEYWORDS.items()}


@dataclass
class SciqSource:
    rows: list[dict[str, Any]]
    description: str  # file path or hub id
    sha256: str | None  # of the file read (zip or train.json); None for the hub


@dataclass
class SciqResult:
    items: dict[str, list[BankItem]]
    stats: dict[str, Any] = field(default_factory=dict)


# ---------------------------------------------------------------- loading


def _parse_rows(text: str, where: str) -> list[dict[str, Any]]:
    data = parse_json(text, where)
    if not isinstance(data, list):
        raise EduFairError(f"{where}: expected a JSON list of SciQ questions")
    for i, row in enumerate(data):
        if not isinstance(row, dict):
            raise EduFairError(f"{where}: item {i} is not an object")
        for key in _REQUIRED:
            if not isinstance(row.get(key), str):
                raise EduFairError(f"{where}: item {i} has no string field {key!r}")
    return data


def load_sciq_train(path: str | Path | None) -> SciqSource:
    """SciQ train split from the official zip, an extracted folder, a ``train.json``, or
    (``path is None``) the Hugging Face hub copy."""
    if path is None:
        return _load_hub()
    path = Path(path)
    if not path.exists():
        raise EduFairError(f"SciQ source not found: {path}")
    if path.is_dir():
        found = sorted(p for p in path.rglob("train.json") if "__MACOSX" not in p.parts)
        if not found:
            raise EduFairError(f"no train.json under {path} (expected the extracted SciQ release)")
        path = found[0]
    if zipfile.is_zipfile(path):
        try:
            with zipfile.ZipFile(path) as zf:
                names = sorted(n for n in zf.namelist() if n.endswith("/train.json") or n == "train.json")
                names = [n for n in names if not n.startswith("__MACOSX")]
                if not names:
                    raise EduFairError(f"{path}: no train.json inside the zip")
                text = zf.read(names[0]).decode("utf-8")
        except (zipfile.BadZipFile, OSError, UnicodeDecodeError) as exc:
            raise EduFairError(f"{path}: cannot read zip ({exc})") from None
        rows = _parse_rows(text, f"{path}!{names[0]}")
    else:
        try:
            text = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise EduFairError(f"cannot read {path}: {exc}") from None
        rows = _parse_rows(text, str(path))
    return SciqSource(rows=rows, description=str(path), sha256=sha256_file(path))


def _load_hub() -> SciqSource:
    try:
        import datasets

        ds = datasets.load_dataset(HUB_ID, split="train")
    except Exception as exc:  # network, auth, cache: all mean "not available here"
        raise EduFairError(
            f"SciQ not found locally and the hub copy {HUB_ID} is unavailable ({type(exc).__name__}); "
            "pass --sciq PATH to the official SciQ.zip"
        ) from None
    rows = [{k: row[k] for k in _REQUIRED} for row in ds]
    return SciqSource(rows=rows, description=f"hf://datasets/{HUB_ID} (train)", sha256=None)


# ---------------------------------------------------------------- filtering and labelling


def is_definitional(question: str) -> bool:
    return clean_text(question).casefold().startswith(DEFINITIONAL_PREFIXES)


def quality_filter(rows: list[dict[str, Any]]) -> tuple[list[tuple[int, dict[str, Any]]], dict[str, int]]:
    """(source index, row) pairs that survive the quality filter, and the per-step counts."""
    stats = {"pool": len(rows)}
    kept = [(i, r) for i, r in enumerate(rows) if r["support"].strip()]
    stats["after_empty_support"] = len(kept)
    kept = [(i, r) for i, r in kept if not is_definitional(r["question"])]
    stats["after_definitional"] = len(kept)
    seen: set[tuple[str, str]] = set()
    unique = []
    for i, r in kept:
        key = (clean_text(r["question"]), r["correct_answer"].strip())
        if key not in seen:
            seen.add(key)
            unique.append((i, r))
    stats["after_dedup"] = len(unique)
    return unique, stats


def classifier_text(row: dict[str, Any]) -> str:
    return row["question"] + " " + row["support"]


def weak_label(text: str) -> str | None:
    """Keyword weak label; None when no keyword matches or the top domains tie."""
    lowered = text.lower()
    hits = {d: len(p.findall(lowered)) for d, p in _KEYWORD_RE.items()}
    best = max(hits.values())
    if best == 0:
        return None
    winners = [d for d, n in hits.items() if n == best]
    return winners[0] if len(winners) == 1 else None


def classify(texts: list[str], labels: list[str | None]) -> tuple[list[str], list[float]]:
    """Train on the weakly labelled texts, relabel all: (predicted class, its probability)."""
    from sklearn.feature_extraction.text import TfidfVectorizer
    from sklearn.linear_model import LogisticRegression

    train_idx = [i for i, lab in enumerate(labels) if lab is not None]
    if len({labels[i] for i in train_idx}) < 2:
        raise EduFairError("SciQ weak labelling produced fewer than two classes; is the input SciQ?")
    features = TfidfVectorizer(**TFIDF_PARAMS).fit_transform(texts)
    model = LogisticRegression(**LOGREG_PARAMS)
    model.fit(features[train_idx], [labels[i] for i in train_idx])
    proba = model.predict_proba(features)
    classes = list(model.classes_)
    best = proba.argmax(axis=1)
    return [classes[j] for j in best], [float(proba[i, j]) for i, j in enumerate(best)]


def build_sciq(source: SciqSource, per_domain: int, seed: int, domains: tuple[str, ...] = KEPT_DOMAINS) -> SciqResult:
    rows, stats = quality_filter(source.rows)
    texts = [classifier_text(r) for _, r in rows]
    weak = [weak_label(t) for t in texts]
    stats["weak_labelled"] = {d: sum(1 for w in weak if w == d) for d in CLASSES}
    stats["weak_unlabelled_no_keyword"] = sum(
        1 for t, w in zip(texts, weak) if w is None and not any(p.search(t.lower()) for p in _KEYWORD_RE.values())
    )
    stats["weak_unlabelled_tie"] = sum(1 for w in weak if w is None) - stats["weak_unlabelled_no_keyword"]
    predicted, confidence = classify(texts, weak)
    stats["predicted"] = {d: predicted.count(d) for d in CLASSES}
    items: dict[str, list[BankItem]] = {}
    stats["kept_by_confidence"], stats["sampled"] = {}, {}
    for domain in domains:
        pool = [
            (idx, row, conf, w)
            for (idx, row), pred, conf, w in zip(rows, predicted, confidence, weak)
            if pred == domain and conf >= CONFIDENCE_MIN
        ]
        stats["kept_by_confidence"][domain] = len(pool)
        chosen = seeded_sample(pool, per_domain, seed)
        stats["sampled"][domain] = len(chosen)
        items[domain] = [_to_item(domain, idx, row, conf, w) for idx, row, conf, w in chosen]
    return SciqResult(items=items, stats=stats)


def _to_item(domain: str, idx: int, row: dict[str, Any], conf: float, weak: str | None) -> BankItem:
    question = clean_text(row["question"])
    answer = clean_text(row["correct_answer"])
    return BankItem(
        id=item_id(domain, SOURCE, question, answer),
        domain=domain,
        grade=GRADES[domain],
        question=question,
        answer=answer,
        answer_forms=text_answer_forms(answer),
        source=SOURCE,
        meta={
            "sciq_split": "train",
            "sciq_index": idx,
            "support": clean_text(row["support"]),
            "distractors": [clean_text(row[f"distractor{k}"]) for k in (1, 2, 3)],
            "label_confidence": round(conf, 3),
            "weak_label": weak,
        },
    )


def parameters(per_domain: int, seed: int) -> dict[str, Any]:
    """Filtering parameters recorded in the manifest."""
    return {
        "split": "train",
        "drop_empty_support": True,
        "definitional_prefixes": list(DEFINITIONAL_PREFIXES),
        "dedup": "exact (question, answer) repeats",
        "keywords": {d: list(ws) for d, ws in KEYWORDS.items()},
        "keyword_match": "case-insensitive whole word, optional plural s, in question + ' ' + support",
        "weak_label_rule": "most keyword hits; no hit or tie -> excluded from training",
        "tfidf": {k: list(v) if isinstance(v, tuple) else v for k, v in TFIDF_PARAMS.items()},
        "tfidf_fit_on": "all filtered items",
        "classifier": {"type": "LogisticRegression", **LOGREG_PARAMS},
        "confidence_min": CONFIDENCE_MIN,
        "per_domain": per_domain,
        "seed": seed,
    }
