"""Conditions & prompts: turn the protocol data (``edufair_metrics/protocol/data/protocol.yaml``)
and bank items into lm-eval documents, one per (question, condition level), question-major.

The paper's protocol is ``protocol.yaml`` (:func:`load_protocol`, :func:`protocol_hash`: unchanged
bytes, so the paper's tasks keep their hash). The conditions EduFair adds beside it are data of the
same schema in ``protocol-extensions.yaml`` (:func:`load_extensions`, version
``EXTENSION_PROTOCOL_VERSION``); :func:`protocol_for` gives the protocol a condition is read from:
``protocol.yaml`` alone for the paper's conditions, both files merged for an extension condition
(the extension's prompts and conditions added to the paper's; a key may not be defined twice).

Pure functions over data; the only I/O is reading the protocol files.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from edufair_metrics import EXTENSION_PROTOCOL_VERSION
from edufair_metrics.errors import EduFairError
from edufair_metrics.io import read_yaml, sha256_file
from edufair_metrics.protocol.names import NAMES_CONDITION, NamesDraw, name_levels
from edufair_metrics.protocol.paths import DATA_DIR
from edufair_metrics.records import ALL_CONDITIONS, EXTENSION_CONDITIONS, GRADES, BankItem, ConditionLevel


def protocol_path() -> Path:
    return DATA_DIR / "protocol.yaml"


def extensions_path() -> Path:
    return DATA_DIR / "protocol-extensions.yaml"


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


_SECTIONS = ("prompts", "composition", "conditions")


@functools.lru_cache(maxsize=None)
def load_extensions(path: str | None = None) -> dict[str, Any]:
    """The extension conditions' data (``protocol-extensions.yaml``): ``version``, ``prompts``,
    ``composition``, ``conditions`` (only the sections it adds to ``protocol.yaml``)."""
    p = Path(path) if path else extensions_path()
    data = read_yaml(p, "protocol extensions file")
    if not isinstance(data, dict):
        raise EduFairError(f"{p}: the protocol extensions file must hold a mapping")
    for key in ("version",) + _SECTIONS:
        if key not in data:
            raise EduFairError(f"{p}: protocol extensions have no '{key}' section")
    if path is None and data["version"] != EXTENSION_PROTOCOL_VERSION:
        raise EduFairError(f"{p}: version {data['version']!r} is not this EduFair's extension protocol version "
                           f"{EXTENSION_PROTOCOL_VERSION!r}")
    return data


@functools.lru_cache(maxsize=None)
def extensions_hash(path: str | None = None) -> str:
    """sha256 of the extensions file: in the provenance of the extension tasks' records."""
    return sha256_file(Path(path) if path else extensions_path())


@functools.lru_cache(maxsize=None)
def merged_protocol() -> dict[str, Any]:
    """``protocol.yaml`` with the extensions' prompts, compositions and conditions added (each
    defined once), ``version`` the extensions'. What an extension condition is read from."""
    base, ext = load_protocol(), load_extensions()
    out = dict(base)
    for section in _SECTIONS:
        twice = sorted(set(base[section]) & set(ext[section] or {}))
        if twice:
            raise EduFairError(f"{extensions_path()}: {section} {', '.join(twice)} already defined in {protocol_path()}")
        out[section] = {**base[section], **(ext[section] or {})}
    # a condition whose levels are a names list (implicit_names) gets one level per name
    out["conditions"] = {cond: ({**body, "levels": name_levels(body["names"])} if "names" in body else body)
                         for cond, body in out["conditions"].items()}
    out["version"] = ext["version"]
    return out


def protocol_for(condition: str) -> dict[str, Any]:
    """The protocol ``condition`` is read from: ``protocol.yaml`` for the paper's conditions, the
    merged protocol for an extension condition."""
    return merged_protocol() if condition in EXTENSION_CONDITIONS else load_protocol()


def extension_provenance(condition: str) -> dict[str, Any] | None:
    """What an extension task records beside the paper's provenance (its protocol version in place
    of the paper's, the extensions file's sha256); None for a paper condition."""
    if condition not in EXTENSION_CONDITIONS:
        return None
    return {"protocol_version": EXTENSION_PROTOCOL_VERSION, "protocol_extensions_sha256": extensions_hash()}


POSTTEST_PROMPT = "posttest"  # the post-test turn's prompt in protocol-extensions.yaml


def posttest_prompt(question: str) -> str:
    """The post-test turn (an extension, ``edufair.posttest``) for the original ``question``."""
    return _fill(merged_protocol()["prompts"][POSTTEST_PROMPT], {"QUESTION": question})


def posttest_provenance() -> dict[str, Any]:
    """What a run with the post-test records (``provenance.posttest``): the extension protocol's
    version and file hash, the prompt template, and what the pre-test is."""
    return {"protocol_version": EXTENSION_PROTOCOL_VERSION, "protocol_extensions_sha256": extensions_hash(),
            "prompt": merged_protocol()["prompts"][POSTTEST_PROMPT], "pretest": "the opening student turn (no call)"}


def condition_levels(condition: str, protocol: dict[str, Any] | None = None) -> list[ConditionLevel]:
    protocol = protocol or protocol_for(condition)
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


def drawn_levels(draw: NamesDraw | None = None) -> tuple[NamesDraw, list[str]]:
    """The names condition's draw (``draw``, or the protocol's default ``{k, seed}``) and the level
    ids it keeps, in the protocol's order."""
    body = protocol_for(NAMES_CONDITION)["conditions"][NAMES_CONDITION]
    draw = draw if draw is not None else NamesDraw.from_setting(body.get("draw") or {}, path="protocol draw")
    drawn = {lv for cell in draw.draw(body["levels"]).values() for lv in cell}
    return draw, [lv["level"] for lv in body["levels"] if lv["level"] in drawn]


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
    protocol = protocol or protocol_for(level.condition)
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
    if condition not in ALL_CONDITIONS:
        raise EduFairError(f"unknown condition '{condition}' (known: {', '.join(ALL_CONDITIONS)})")
    protocol = protocol or protocol_for(condition)
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
    protocol = protocol or protocol_for(level.condition)
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
