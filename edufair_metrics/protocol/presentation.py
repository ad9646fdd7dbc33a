"""How the reports present each condition (``data/presentation.yaml``): its running order, title,
FDR family and the tables to read for it. Report code iterates over the conditions it finds in the
data and asks :func:`presentation` for each; a condition the file does not list gets the file's
default (its name as the title, ordered after the listed ones, its own FDR family), so that an
extension condition added to the protocol data is shown without a line of report code."""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Iterable

from edufair_metrics.errors import EduFairError
from edufair_metrics.io import read_yaml
from edufair_metrics.protocol.paths import DATA_DIR

PRESENTATION_FILE = DATA_DIR / "presentation.yaml"
FAMILIES = ("headline", "own")  # the paper's headline family, or a family of its own per tutor × kind
KEYS = {"order", "title", "family", "tables"}
UNLISTED_ORDER = 1000  # a condition the file does not list: after the listed ones (by name among themselves)


@dataclass(frozen=True)
class ConditionPresentation:
    condition: str
    order: int
    title: str
    family: str  # "headline" or "own"
    tables: str
    listed: bool = True  # False: the file's default (a condition the file does not name)

    @property
    def extension(self) -> bool:
        """Not part of the paper's headline: shown in the summary's extension section."""
        return self.family == "own"


@functools.lru_cache(maxsize=None)
def _load() -> tuple[dict[str, ConditionPresentation], dict]:
    data = read_yaml(PRESENTATION_FILE)
    default = dict(data.get("default") or {})
    out: dict[str, ConditionPresentation] = {}
    for cond, entry in (data.get("conditions") or {}).items():
        unknown = set(entry) - KEYS
        missing = KEYS - set(entry)
        if unknown or missing:
            raise EduFairError(f"{PRESENTATION_FILE}: condition {cond}: "
                               + (f"unknown key(s) {', '.join(sorted(unknown))}" if unknown else
                                  f"missing key(s) {', '.join(sorted(missing))}"))
        if entry["family"] not in FAMILIES:
            raise EduFairError(f"{PRESENTATION_FILE}: condition {cond}: family must be one of {', '.join(FAMILIES)}")
        out[cond] = ConditionPresentation(cond, int(entry["order"]), str(entry["title"]), entry["family"],
                                          str(entry["tables"]))
    return out, default


def presentation(condition: str) -> ConditionPresentation:
    """The presentation of ``condition``: its entry, or the file's default for an unlisted one."""
    listed, default = _load()
    if condition in listed:
        return listed[condition]
    return ConditionPresentation(condition, UNLISTED_ORDER, condition.replace("_", " ").capitalize(),
                                 default.get("family", "own"), str(default.get("tables", "units.csv")), listed=False)


def ordered(conditions: Iterable[str]) -> list[str]:
    """``conditions`` (duplicates dropped) in the presentation order (unlisted ones by name after them)."""
    return sorted(dict.fromkeys(conditions), key=lambda c: (presentation(c).order, c))


def order_key(condition: str) -> int:
    """The rank of ``condition`` in the presentation order (for sorting frames)."""
    return presentation(condition).order


def extension_conditions(conditions: Iterable[str]) -> list[str]:
    """Those of ``conditions`` that are not in the paper's headline family, in presentation order."""
    return [c for c in ordered(conditions) if presentation(c).extension]


def is_extension(condition: str) -> bool:
    """Not in the paper's headline family (own FDR family, the summary's extension section)."""
    return presentation(condition).extension
