"""The contrasts of each condition (paper §3.4), as declared in ``protocol.yaml``: which condition
levels are compared, how (binary, averaged groups, pairs, or multilevel with Friedman), and
whether a contrast counts towards the headline.

A multi-level dimension (SES: low-income, middle-class, high-income) yields two specs:

* its *single* signed contrast, a binary spec named like the dimension ("SES") that is the
  dimension's headline unit. The paper's Tables 6, 8 and 10 use one signed r per (model, domain)
  for SES (Table 8's SES column equals Table 10's |r̄|, and Table 6 averages that one r with the
  three binary dimensions). The paper does not say which pair; EduFair uses the first vs the last
  of the ordered levels (low-income vs high-income: the extremes of the scale, a = the lower level,
  as a = the marginalised group everywhere else). ``single: [a, b]`` on the yaml entry overrides it.
* the Friedman test with Bonferroni post-hoc pairs (``"<name> (Friedman)"``, kind multilevel),
  reported as extra rows; not a headline unit unless ``--ses-summary`` picks a pairwise summary
  (``analysis.ses``)."""

from __future__ import annotations

import functools
import itertools
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from edufair_metrics.errors import EduFairError
from edufair_metrics.protocol.prompts import extensions_path, load_extensions, load_protocol, merged_protocol, protocol_path

HEADLINE_EXCLUDED = ("tutor_effect", "student_effect", "interaction")
FRIEDMAN_SUFFIX = " (Friedman)"


def single_pair(levels: tuple[str, ...], override: Any = None) -> tuple[str, str]:
    """The one signed contrast of a multi-level dimension: ``override`` (two of ``levels``) or the
    first vs the last level (SES: low_income vs high_income)."""
    if override is None:
        return levels[0], levels[-1]
    pair = _as_tuple(override)
    if len(pair) != 2 or pair[0] == pair[1] or any(lv not in levels for lv in pair):
        raise EduFairError(f"contrast 'single' must name two different levels of {list(levels)}, got {list(pair)}")
    return pair[0], pair[1]


@dataclass(frozen=True)
class ContrastSpec:
    """One contrast of the protocol. ``kind``: binary (one a/b pair), multilevel (Friedman over
    ``levels``), pairs (several binary pairs pooled by mean |r|), averaged (a/b are lists of
    levels averaged per question), names (a/b are groups of names, each side averaged over its
    names within each stratum, ``cells``; inference with the names as a random effect,
    ``analysis.names``)."""

    condition: str
    dimension: str
    name: str
    kind: str
    pairs: tuple[tuple[tuple[str, ...], tuple[str, ...]], ...] = ()
    levels: tuple[str, ...] = ()
    headline: bool = True
    # kind names: the name cells, (side "a" | "b", stratum, its levels), every level of the condition
    cells: tuple[tuple[str, str, tuple[str, ...]], ...] = ()

    def pair_label(self, a: tuple[str, ...], b: tuple[str, ...]) -> str:
        if len(a) == 1 and len(b) == 1:
            return f"{a[0]}-{b[0]}"
        return self.dimension


def _as_tuple(x: Any) -> tuple[str, ...]:
    return tuple(str(v) for v in x) if isinstance(x, (list, tuple)) else (str(x),)


def load_contrasts(path: str | Path | None = None) -> list[ContrastSpec]:
    """The contrasts of every condition: the paper's from ``protocol.yaml`` and EduFair's extension
    conditions' from ``protocol-extensions.yaml`` (default: the shipped files; ``path``: that
    protocol file alone). An extension condition's contrasts are never headline units: the paper's
    headline, its tables and its FDR families are those of the paper's conditions alone."""
    if path is not None:
        return list(_load_contrasts_cached(str(path)))
    return list(_load_contrasts_cached(str(protocol_path()))) + list(_load_contrasts_cached(str(extensions_path()), True))


@functools.lru_cache(maxsize=4)
def _load_contrasts_cached(path: str, extension: bool = False) -> tuple[ContrastSpec, ...]:
    proto = load_extensions() if extension else load_protocol(path)
    specs: list[ContrastSpec] = []
    for cond, body in (proto.get("conditions") or {}).items():
        for c in body.get("contrasts") or []:
            dim, name = str(c["dimension"]), str(c.get("name", c["dimension"]))
            headline = dim not in HEADLINE_EXCLUDED and not extension
            if c.get("kind") == "names":
                specs.append(_names_spec(cond, dim, name, c, headline))
            elif "levels" in c:
                lv = _as_tuple(c["levels"])
                a, b = single_pair(lv, c.get("single"))
                specs.append(ContrastSpec(cond, dim, name, "binary", (((a,), (b,)),), (), headline))
                pairs = tuple(((lv[i],), (lv[j],)) for i, j in itertools.combinations(range(len(lv)), 2))
                specs.append(ContrastSpec(cond, dim, name + FRIEDMAN_SUFFIX, "multilevel", pairs, lv, False))
            elif "pairs" in c:
                pairs = tuple(((str(p[0]),), (str(p[1]),)) for p in c["pairs"])
                specs.append(ContrastSpec(cond, dim, name, "pairs", pairs, (), headline))
            elif isinstance(c.get("a"), list) or isinstance(c.get("b"), list):
                specs.append(ContrastSpec(cond, dim, name, "averaged", ((_as_tuple(c["a"]), _as_tuple(c["b"])),), (), headline))
            else:
                specs.append(ContrastSpec(cond, dim, name, "binary", (((str(c["a"]),), (str(c["b"]),)),), (), headline))
    return tuple(specs)


def _names_spec(condition: str, dim: str, name: str, c: dict[str, Any], headline: bool) -> ContrastSpec:
    """A names contrast: ``a`` / ``b`` select levels by their attributes (``{gender: female}``),
    ``strata`` names the attribute within whose values the sides are compared."""
    levels = merged_protocol()["conditions"][condition]["levels"]
    stratum_key = str(c.get("strata", ""))

    def select(sel: Any) -> list[dict[str, Any]]:
        if not isinstance(sel, dict) or not sel:
            raise EduFairError(f"names contrast {name!r}: a and b must select levels by attributes, got {sel!r}")
        return [lv for lv in levels if all(str(lv["attributes"].get(k)) == str(v) for k, v in sel.items())]

    cells = []
    for side, sel in (("a", c.get("a")), ("b", c.get("b"))):
        by: dict[str, list[str]] = {}
        for lv in select(sel):
            by.setdefault(str(lv["attributes"].get(stratum_key, "")), []).append(lv["level"])
        if not by:
            raise EduFairError(f"names contrast {name!r}: side {side} selects no level")
        cells += [(side, stratum, tuple(lvs)) for stratum, lvs in by.items()]
    a = tuple(lv for side, _, lvs in cells if side == "a" for lv in lvs)
    b = tuple(lv for side, _, lvs in cells if side == "b" for lv in lvs)
    return ContrastSpec(condition, dim, name, "names", ((a, b),), (), headline, tuple(cells))
