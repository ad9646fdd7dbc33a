"""The EduFair question bank: builders (SciQ, SocraTeach, GSM8K proxy) and a validating loader.

``load_bank(domain)`` is what the tasks use at run time (no network): it reads the shipped
``edufair_metrics/bank/data/<domain>.jsonl`` and checks every record.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from edufair_metrics.errors import EduFairError
from edufair_metrics.io import iter_jsonl
from edufair_metrics.records import DOMAINS, GRADES, BankItem
from edufair_metrics.bank.common import BANK_VERSION

DATA_DIR = Path(__file__).resolve().parent / "data"  # the shipped bank

__all__ = ["load_bank", "validate_record", "bank_path", "domain_label", "BANK_VERSION", "SOURCES"]

SOURCES = ("sciq", "socrateach", "gsm8k-proxy")
_STRING_FIELDS = ("id", "domain", "question", "answer", "source")
GSM8K_PROXY_LABEL = "mathematics (GSM8K proxy)"


def domain_label(domain: str, source: str | None) -> str:
    """The name a report prints for a domain: the GSM8K stand-in for SocraTeach must never be
    mistaken for the paper's mathematics bank, so its items are labelled as a proxy."""
    if domain == "mathematics" and source == "gsm8k-proxy":
        return GSM8K_PROXY_LABEL
    return domain


def bank_path(domain: str, data_dir: str | Path | None = None) -> Path:
    if domain not in DOMAINS:
        raise EduFairError(f"unknown domain {domain!r}; choose from {', '.join(DOMAINS)}")
    if data_dir is None:
        data_dir = DATA_DIR
    return Path(data_dir) / f"{domain}.jsonl"


def validate_record(obj: Any, domain: str, where: str) -> BankItem:
    """Check one parsed line; ``where`` is ``file:line`` for the error message."""
    if not isinstance(obj, dict):
        raise EduFairError(f"{where}: expected a JSON object, got {type(obj).__name__}")
    for key in _STRING_FIELDS:
        if key not in obj:
            raise EduFairError(f"{where}: missing key {key!r}")
        if not isinstance(obj[key], str) or not obj[key].strip():
            raise EduFairError(f"{where}: {key!r} must be a non-empty string")
    for key in ("grade", "answer_forms"):
        if key not in obj:
            raise EduFairError(f"{where}: missing key {key!r}")
    if obj["domain"] != domain:
        raise EduFairError(f"{where}: domain {obj['domain']!r} in the {domain} bank")
    if isinstance(obj["grade"], bool) or not isinstance(obj["grade"], int) or obj["grade"] != GRADES[domain]:
        raise EduFairError(f"{where}: grade must be {GRADES[domain]} for {domain} (got {obj['grade']!r})")
    forms = obj["answer_forms"]
    if not isinstance(forms, list) or not forms or not all(isinstance(f, str) and f.strip() for f in forms):
        raise EduFairError(f"{where}: 'answer_forms' must be a non-empty list of non-empty strings")
    if obj["source"] not in SOURCES:
        raise EduFairError(f"{where}: unknown source {obj['source']!r}; expected one of {', '.join(SOURCES)}")
    if not isinstance(obj.get("meta", {}), dict):
        raise EduFairError(f"{where}: 'meta' must be an object")
    return BankItem.from_dict(obj)


def load_bank(domain: str, data_dir: str | Path | None = None) -> list[BankItem]:
    """All questions of one domain, validated; any bad line raises EduFairError naming
    the file and the line."""
    path = bank_path(domain, data_dir)
    if not path.is_file():
        raise EduFairError(f"question bank not found: {path} (run `edufair build-bank`)")
    items: list[BankItem] = []
    seen: dict[str, int] = {}
    for lineno, obj in iter_jsonl(path):
        item = validate_record(obj, domain, f"{path}:{lineno}")
        if item.id in seen:
            raise EduFairError(f"{path}:{lineno}: duplicate id {item.id!r} (first on line {seen[item.id]})")
        seen[item.id] = lineno
        items.append(item)
    if not items:
        raise EduFairError(f"{path}: the {domain} bank is empty")
    return items
