"""The contrasts of each condition (paper §3.4), as declared in ``protocol.yaml``: which condition
levels are compared, how (binary, averaged groups, pairs, or multilevel with Friedman), and
whether a contrast counts towards the headline."""

from __future__ import annotations

import functools
import itertools
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from edufair_metrics.protocol.prompts import load_protocol, protocol_path

HEADLINE_EXCLUDED = ("tutor_effect", "student_effect", "interaction")


@dataclass(frozen=True)
class ContrastSpec:
    """One contrast of the protocol. ``kind``: binary (one a/b pair), multilevel (Friedman over
    ``levels``), pairs (several binary pairs pooled by mean |r|), averaged (a/b are lists of
    levels averaged per question)."""

    condition: str
    dimension: str
    name: str
    kind: str
    pairs: tuple[tuple[tuple[str, ...], tuple[str, ...]], ...] = ()
    levels: tuple[str, ...] = ()
    headline: bool = True

    def pair_label(self, a: tuple[str, ...], b: tuple[str, ...]) -> str:
        if len(a) == 1 and len(b) == 1:
            return f"{a[0]}-{b[0]}"
        return self.dimension


def _as_tuple(x: Any) -> tuple[str, ...]:
    return tuple(str(v) for v in x) if isinstance(x, (list, tuple)) else (str(x),)


def load_contrasts(path: str | Path | None = None) -> list[ContrastSpec]:
    """The contrasts of every condition, from ``protocol.yaml`` (default: the shipped one)."""
    return list(_load_contrasts_cached(str(path or protocol_path())))


@functools.lru_cache(maxsize=4)
def _load_contrasts_cached(path: str) -> tuple[ContrastSpec, ...]:
    proto = load_protocol(path)
    specs: list[ContrastSpec] = []
    for cond, body in (proto.get("conditions") or {}).items():
        for c in body.get("contrasts") or []:
            dim, name = str(c["dimension"]), str(c.get("name", c["dimension"]))
            headline = dim not in HEADLINE_EXCLUDED
            if "levels" in c:
                lv = _as_tuple(c["levels"])
                pairs = tuple(((lv[i],), (lv[j],)) for i, j in itertools.combinations(range(len(lv)), 2))
                specs.append(ContrastSpec(cond, dim, name, "multilevel", pairs, lv, headline))
            elif "pairs" in c:
                pairs = tuple(((str(p[0]),), (str(p[1]),)) for p in c["pairs"])
                specs.append(ContrastSpec(cond, dim, name, "pairs", pairs, (), headline))
            elif isinstance(c.get("a"), list) or isinstance(c.get("b"), list):
                specs.append(ContrastSpec(cond, dim, name, "averaged", ((_as_tuple(c["a"]), _as_tuple(c["b"])),), (), headline))
            else:
                specs.append(ContrastSpec(cond, dim, name, "binary", (((str(c["a"]),), (str(c["b"]),)),), (), headline))
    return tuple(specs)
