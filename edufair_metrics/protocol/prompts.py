"""Conditions & prompts: turn the protocol data (``edufair_metrics/protocol/data/protocol.yaml``)
and bank items into lm-eval documents, one per (question, condition level), question-major.

Pure functions over data; the only I/O is reading the protocol file.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from edufair_metrics.errors import EduFairError
from edufair_metrics.io import read_yaml, sha256_file
from edufair_metrics.protocol.paths import DATA_DIR
from edufair_metrics.records import CONDITIONS, GRADES, BankItem, ConditionLevel


def protocol_path() -> Path:
    return DATA_DIR / "protocol.yaml"


@functools.lru_cache(maxsize=None)
def load_protocol(path: str | None = None) -> dict[str, Any]:
    p = Path(path) if path else protocol_path()
    data = read_yaml(p, "protocol file")
    if not isinstance(data, dict):
        raise EduFairError(f"{p}: the protocol file must hold a mapping")
    for key in ("version", "prompts", "composition", "conditions", "grades", "joiner"):
        if key not in data:
            raise EduFairError(f"{p}: protocol has no '{key}' section")
    return data


@functools.lru_cache(maxsize=None)
def protocol_hash(path: str | None = None) -> str:
    """sha256 of the protocol file: goes into every record's provenance (read once per process)."""
    return sha256_file(Path(path) if path else protocol_path())


def condition_levels(condition: str, protocol: dict[str, Any] | None = None) -> list[ConditionLevel]:
    protocol = protocol or load_protocol()
    if condition not in protocol["conditions"]:
        known = ", ".join(protocol["conditions"])
        raise EduFairError(f"unknown condition '{condition}' (known: {known})")
    out = []
    for spec in protocol["conditions"][condition]["levels"]:
        attrs = dict(spec.get("attributes", {}))
        attrs.update({k.lower(): str(v) for k, v in spec.get("values", {}).items()})
        out.append(ConditionLevel(condition=condition, dimension=spec["dimension"], level=spec["level"], attributes=attrs))
    return out


def select_levels(condition: str, levels: list[str] | None, protocol: dict[str, Any] | None = None) -> list[ConditionLevel]:
    """All levels of a condition, or the named subset (unknown names are an error, not ignored)."""
    all_levels = condition_levels(condition, protocol)
    if not levels:
        return all_levels
    by_name = {lv.level: lv for lv in all_levels}
    unknown = [name for name in levels if name not in by_name]
    if unknown:
        raise EduFairError(
            f"unknown level(s) {', '.join(unknown)} for condition '{condition}' (known: {', '.join(by_name)})"
        )
    return [by_name[name] for name in levels]


@dataclass(frozen=True)
class SystemPrompts:
    tutor: str
    student: str


def _fill(template: str, values: dict[str, str]) -> str:
    # str.format would choke on braces in prompt text; replace only the documented placeholders.
    out = template
    for key, value in values.items():
        out = out.replace("{" + key + "}", value)
    return out


def system_prompts(level: ConditionLevel, domain: str, protocol: dict[str, Any] | None = None) -> SystemPrompts:
    """The exact tutor and student system prompts for one condition level in one domain."""
    protocol = protocol or load_protocol()
    if domain not in protocol["grades"]:
        raise EduFairError(f"unknown domain '{domain}' (known: {', '.join(protocol['grades'])})")
    spec = next(s for s in protocol["conditions"][level.condition]["levels"] if s["level"] == level.level)
    values = {"GRADE": str(protocol["grades"][domain]), "DOMAIN": domain}
    values.update({k: str(v) for k, v in spec.get("values", {}).items()})
    prompts = dict(protocol["prompts"])
    if "template" in spec:
        prompts["explicit_framing"] = prompts[spec["template"]]
    composition = protocol["composition"][level.condition]
    joiner = protocol["joiner"]

    def compose(parts: list[str]) -> str:
        return joiner.join(_fill(prompts[part], values) for part in parts)

    return SystemPrompts(tutor=compose(composition["tutor"]), student=compose(composition["student"]))


def expand_documents(
    items: list[BankItem], condition: str, levels: list[str] | None = None, protocol: dict[str, Any] | None = None
) -> list[dict[str, Any]]:
    """One document per (question, level), question-major: all levels of question 1, then
    question 2, ... so that ``--limit k*len(levels)`` keeps demographic pairs complete."""
    if condition not in CONDITIONS:
        raise EduFairError(f"unknown condition '{condition}' (known: {', '.join(CONDITIONS)})")
    protocol = protocol or load_protocol()
    chosen = select_levels(condition, levels, protocol)
    docs = []
    for item in items:
        if GRADES.get(item.domain) != item.grade:
            raise EduFairError(f"bank item {item.id}: grade {item.grade} does not match domain {item.domain}")
        for lv in chosen:
            sp = system_prompts(lv, item.domain, protocol)
            docs.append(
                {
                    "question_id": item.id,
                    "domain": item.domain,
                    "grade": item.grade,
                    "question": item.question,
                    "answer": item.answer,
                    "answer_forms": list(item.answer_forms),
                    "source": item.source,
                    "condition": condition,
                    "dimension": lv.dimension,
                    "level": lv.level,
                    "tutor_system": sp.tutor,
                    "student_system": sp.student,
                }
            )
    return docs


def cue_sentences(level: ConditionLevel, domain: str, protocol: dict[str, Any] | None = None) -> SystemPrompts:
    """The sentences of ``level``'s tutor and student system prompts that carry its demographic
    cue, each role's joined by newlines (empty: that prompt has none): the filled prompt components
    whose text differs between the levels of the condition (Explicit's framing sentence, Implicit's
    name sentence, Opposite's two gender statements). For showing where the cue sits."""
    protocol = protocol or load_protocol()
    spec = next(s for s in protocol["conditions"][level.condition]["levels"] if s["level"] == level.level)
    values = {"GRADE": str(protocol["grades"].get(domain, "")), "DOMAIN": domain}
    composition = protocol["composition"][level.condition]

    def filled(part: str, lv_spec: dict[str, Any]) -> str:
        prompts = dict(protocol["prompts"])
        if "template" in lv_spec:
            prompts["explicit_framing"] = prompts[lv_spec["template"]]
        return _fill(prompts[part], {**values, **{k: str(v) for k, v in lv_spec.get("values", {}).items()}})

    others = [s for s in protocol["conditions"][level.condition]["levels"] if s["level"] != level.level]
    out = {}
    for role in ("tutor", "student"):
        mine = [filled(part, spec) for part in composition[role]]
        out[role] = "\n".join(text for part, text in zip(composition[role], mine)
                              if any(filled(part, o) != text for o in others))
    return SystemPrompts(**out)
