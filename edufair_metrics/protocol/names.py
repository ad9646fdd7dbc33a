"""Many names per group for the Implicit condition (an EduFair extension, condition ``implicit_names``):
the levels are names from the list of Wan & Chang (2025) shipped as ``data/names.json`` (MIT,
``data/names-LICENSE``; github.com/elainew728/labe-agency), 5 per (gender × ethnicity) cell: 2
genders × 4 ethnicities (White, Black, Hispanic, Asian) = 40 names. A task runs k names per cell.

The draw (``edufair.names: {k: 3, seed: 0}``; its defaults in ``protocol-extensions.yaml``): within
each cell the names are ranked by ``sha256(f"{seed}:{gender}:{ethnicity}:{name}")`` and the first k
are kept. It depends only on the seed and the list, so every tutor, machine and run gets the same
names; the drawn names, k, the seed and the list's sha256 are recorded in every record's provenance
(``names_draw``). k = 5 runs the whole list (no draw).

Level names: the name in lower case ASCII, other characters as ``_`` ("José" -> ``jose``,
"Ji-Yoon" -> ``ji_yoon``); dimension ``name``; attributes ``gender``, ``ethnicity`` (lower case),
``name``."""

from __future__ import annotations

import functools
import hashlib
import re
import unicodedata
from typing import Any, ClassVar

from pydantic import Field

from edufair_metrics.errors import EduFairError
from edufair_metrics.io import read_json, sha256_file
from edufair_metrics.protocol.paths import DATA_DIR
from edufair_metrics.schema import SettingsModel

NAMES_CONDITION = "implicit_names"


def names_path(file: str = "names.json"):
    return DATA_DIR / file


def name_level(name: str) -> str:
    """The level id of a name: ASCII lower case, any other run of characters ``_``."""
    ascii_name = unicodedata.normalize("NFKD", name).encode("ascii", "ignore").decode("ascii")
    return re.sub(r"[^a-z0-9]+", "_", ascii_name.lower()).strip("_")


@functools.lru_cache(maxsize=4)
def names_table(file: str = "names.json") -> dict[tuple[str, str], tuple[str, ...]]:
    """{(gender, ethnicity): names} of the shipped list, in its order (ethnicity as in the file)."""
    data = read_json(names_path(file))
    table = (data or {}).get("names") if isinstance(data, dict) else None
    if not isinstance(table, dict):
        raise EduFairError(f"{names_path(file)}: no 'names' mapping of gender -> ethnicity -> names")
    out: dict[tuple[str, str], tuple[str, ...]] = {}
    for gender, by_eth in table.items():
        for eth, names in (by_eth or {}).items():
            out[(str(gender), str(eth))] = tuple(str(n) for n in names)
    return out


def name_levels(spec: dict[str, Any]) -> list[dict[str, Any]]:
    """The level specs (as ``protocol.yaml`` writes levels) of the names condition ``spec``
    (``{file, genders, ethnicities}``): every name of every cell, cell by cell."""
    table = names_table(str(spec.get("file", "names.json")))
    out = []
    seen: set[str] = set()
    for gender in spec["genders"]:
        for eth in spec["ethnicities"]:
            names = table.get((str(gender), str(eth)))
            if not names:
                raise EduFairError(f"{names_path()}: no names for ({gender}, {eth})")
            for name in names:
                level = name_level(name)
                if level in seen:
                    raise EduFairError(f"{names_path()}: two names give the level {level!r}")
                seen.add(level)
                out.append({"level": level, "dimension": "name", "values": {"NAME": name},
                            "attributes": {"gender": str(gender), "ethnicity": str(eth).lower()}})
    return out


class NamesDraw(SettingsModel):
    """``names: {k: 3, seed: 0}`` in the ``edufair`` settings: k names per (gender × ethnicity)
    cell, drawn with ``seed`` (the names tasks only)."""

    PATH: ClassVar[str] = "edufair.names"
    EXPECTED: ClassVar[str] = "a mapping like {k: 3, seed: 0}"

    k: int = Field(3, ge=1, le=5, description="names per gender x ethnicity cell (1-5; 5: the whole list)")
    seed: int = 0

    def draw(self, levels: list[dict[str, Any]]) -> dict[tuple[str, str], list[str]]:
        """{(gender, ethnicity): the k drawn level ids} of the names condition's ``levels``, each
        cell's in the list's order."""
        cells: dict[tuple[str, str], list[dict[str, Any]]] = {}
        for lv in levels:
            attrs = lv["attributes"]
            cells.setdefault((attrs["gender"], attrs["ethnicity"]), []).append(lv)
        out = {}
        for (gender, eth), members in cells.items():
            if len(members) < self.k:
                raise EduFairError(f"edufair.names.k = {self.k}, but the cell ({gender}, {eth}) has only "
                                   f"{len(members)} names")
            ranked = sorted(members, key=lambda lv, g=gender, e=eth: self.rank_key(g, e, lv["values"]["NAME"]))
            chosen = {lv["level"] for lv in ranked[: self.k]}
            out[(gender, eth)] = [lv["level"] for lv in members if lv["level"] in chosen]
        return out

    def rank_key(self, gender: str, ethnicity: str, name: str) -> str:
        """A name's place in its cell's draw: ``sha256(f"{seed}:{gender}:{ethnicity}:{name}")``."""
        return hashlib.sha256(f"{self.seed}:{gender}:{ethnicity}:{name}".encode("utf-8")).hexdigest()

    def provenance(self, levels: list[dict[str, Any]], file: str = "names.json") -> dict[str, Any]:
        """What a names task records (``names_draw``): k, seed, the list's sha256 and the names drawn
        per cell (``"female/white": ["Emily", ...]``)."""
        by_level = {lv["level"]: lv["values"]["NAME"] for lv in levels}
        drawn = {f"{g}/{e}": [by_level[x] for x in lvs] for (g, e), lvs in self.draw(levels).items()}
        return {"k": self.k, "seed": self.seed, "names_sha256": sha256_file(names_path(file)), "drawn": drawn}


__all__ = ["NAMES_CONDITION", "NamesDraw", "name_level", "name_levels", "names_path", "names_table"]
