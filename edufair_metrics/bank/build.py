"""Build the bank: load sources, filter, write JSONL + licences + manifest + README atomically.

Everything written is a pure function of (source bytes, parameters, seed): records are dumped
with sorted keys, the manifest stores source file *names* (not absolute paths) and no
timestamps, so rebuilding from the same inputs is byte-for-byte identical.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Sequence

from edufair_metrics.errors import EduFairError
from edufair_metrics.io import atomic_write_text
from edufair_metrics.records import DOMAINS, BankItem
from edufair_metrics.bank import gsm8k, licenses, sciq, socrateach
from edufair_metrics.bank.common import BANK_VERSION, DEFAULT_PER_DOMAIN, DEFAULT_SEED, shared_data_dir

MANIFEST = "manifest.json"
README = "README.md"
LICENSE_NAMES = {"sciq": "CC BY-NC 3.0", "gsm8k-proxy": "MIT", "socrateach": "CC BY-NC 4.0"}
LICENSE_FILES = {"sciq": licenses.SCIQ_FILE, "gsm8k-proxy": licenses.GSM8K_FILE, "socrateach": licenses.SOCRATEACH_FILE}
LICENSE_TEXTS = {"sciq": licenses.SCIQ, "gsm8k-proxy": licenses.GSM8K, "socrateach": licenses.SOCRATEACH}


@dataclass
class BuiltFile:
    domain: str
    items: list[BankItem]
    entry: dict[str, Any]  # manifest entry without count/sha256 (added on write)


def default_sciq_source() -> Path | None:
    """The official zip at ``<repo>/../shared/data/sciq/SciQ.zip`` when present (else: hub)."""
    path = shared_data_dir() / "sciq" / "SciQ.zip"
    return path if path.is_file() else None


def default_gsm8k_source() -> Path:
    return shared_data_dir() / "gsm8k"


def dumps_bank(items: Sequence[BankItem]) -> str:
    """One JSON object per line, keys sorted, UTF-8 kept: the canonical, byte-stable form."""
    return "".join(json.dumps(it.to_dict(), ensure_ascii=False, sort_keys=True) + "\n" for it in items)


def _name(desc: str) -> str:
    return desc if desc.startswith("hf://") else Path(desc).name


def build_sciq_files(path: str | Path | None, domains: Sequence[str], per_domain: int, seed: int, log: Callable[[str], None]) -> list[BuiltFile]:
    if path is None or str(path) == "hub":
        path = None if str(path) == "hub" else default_sciq_source()
    log(f"SciQ: reading {path if path is not None else 'hf://datasets/' + sciq.HUB_ID}")
    source = sciq.load_sciq_train(path)
    result = sciq.build_sciq(source, per_domain, seed, tuple(domains))
    s = result.stats
    log(
        f"SciQ: pool {s['pool']} -> support {s['after_empty_support']} -> non-definitional "
        f"{s['after_definitional']} -> unique {s['after_dedup']}; weak labels {s['weak_labelled']} "
        f"(no keyword {s['weak_unlabelled_no_keyword']}, tie {s['weak_unlabelled_tie']}); "
        f"predicted {s['predicted']}; conf >= {sciq.CONFIDENCE_MIN}: {s['kept_by_confidence']}"
    )
    return [
        BuiltFile(
            domain=d,
            items=result.items[d],
            entry={
                "source": sciq.SOURCE,
                "source_file": _name(source.description),
                "source_sha256": source.sha256,
                "parameters": sciq.parameters(per_domain, seed),
                "counts": result.stats,
            },
        )
        for d in domains
    ]


def build_math_file(gsm8k_path: str | Path | None, socrateach_path: str | Path | None, per_domain: int, seed: int, log: Callable[[str], None]) -> BuiltFile:
    if socrateach_path is not None:
        log(f"SocraTeach: reading {socrateach_path}")
        problems, desc, sha = socrateach.load_socrateach(socrateach_path)
        result = socrateach.build_socrateach(problems, per_domain, seed, desc, sha)
        log(f"SocraTeach: {result.stats}")
        return BuiltFile(
            domain="mathematics",
            items=result.items,
            entry={
                "source": socrateach.SOURCE,
                "source_file": _name(desc),
                "source_sha256": sha,
                "parameters": socrateach.parameters(per_domain, seed),
                "counts": result.stats,
            },
        )
    path = Path(gsm8k_path) if gsm8k_path is not None else default_gsm8k_source()
    log(f"GSM8K proxy: reading {path}")
    result = gsm8k.build_gsm8k(path, per_domain, seed)
    log(f"GSM8K proxy: {result.stats}")
    return BuiltFile(
        domain="mathematics",
        items=result.items,
        entry={
            "source": gsm8k.SOURCE,
            "source_file": _name(result.source_file),
            "source_sha256": result.source_sha256,
            "parameters": gsm8k.parameters(per_domain, seed),
            "counts": result.stats,
            "note": "proxy for SocraTeach (not obtainable offline); rebuild with --socrateach for the faithful split",
        },
    )


def _read_manifest(out_dir: Path) -> dict[str, Any]:
    path = out_dir / MANIFEST
    if not path.is_file():
        return {}
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError):
        return {}  # a broken manifest is regenerated rather than merged
    return data if isinstance(data, dict) and isinstance(data.get("files"), dict) else {}


def _write(path: Path, text: str) -> None:
    atomic_write_text(path, text)
    # mkstemp creates 0600 files; the bank is package data that any user must be able to read.
    path.chmod(0o644)


def write_bank(out_dir: str | Path, built: Sequence[BuiltFile], seed: int) -> dict[str, Any]:
    """Write the JSONL files, their licences, the merged manifest and the README."""
    out_dir = Path(out_dir)
    old = _read_manifest(out_dir)
    files: dict[str, Any] = dict(old.get("files", {})) if old.get("bank_version") == BANK_VERSION else {}
    for b in built:
        ids = [it.id for it in b.items]
        if len(set(ids)) != len(ids):
            raise EduFairError(f"{b.domain}: duplicate ids in the built bank")
        text = dumps_bank(b.items)
        name = f"{b.domain}.jsonl"
        _write(out_dir / name, text)
        src = b.entry["source"]
        _write(out_dir / LICENSE_FILES[src], LICENSE_TEXTS[src])
        files[name] = {
            "domain": b.domain,
            "count": len(b.items),
            "sha256": hashlib.sha256(text.encode("utf-8")).hexdigest(),
            "bank_version": BANK_VERSION,
            "seed": seed,
            "license": {"name": LICENSE_NAMES[src], "file": LICENSE_FILES[src]},
            **b.entry,
        }
    manifest = {"bank_version": BANK_VERSION, "files": dict(sorted(files.items()))}
    _write(out_dir / MANIFEST, json.dumps(manifest, indent=2, ensure_ascii=False, sort_keys=True) + "\n")
    _write(out_dir / README, render_readme(manifest))
    return manifest


def render_readme(manifest: dict[str, Any]) -> str:
    lines = [
        "# EduFair question bank",
        "",
        "Generated by `edufair build-bank` (do not edit by hand); `manifest.json` has counts, sha256,",
        "filtering parameters, seed and source checksums. One JSON object per line:",
        "`id, domain, grade, question, answer, answer_forms, source, meta`.",
        "",
        "| file | questions | source | licence |",
        "|---|---|---|---|",
    ]
    for name, e in manifest["files"].items():
        lines.append(f"| {name} | {e['count']} | {e['source']} ({e['source_file']}) | {e['license']['name']}, `{e['license']['file']}` |")
    lines += [
        "",
        "- physics/chemistry: SciQ (Welbl et al., 2017), CC BY-NC 3.0: research, non-commercial use.",
        "- mathematics: `source: gsm8k-proxy` = GSM8K (Cobbe et al., 2021, MIT) train problems with a",
        "  multi-step proxy filter, shipped because SocraTeach cannot be downloaded offline;",
        "  `edufair build-bank --socrateach SocraTeach_multi.json` replaces it with the paper's",
        "  SocraTeach split (`source: socrateach`, data CC BY-NC 4.0).",
        "",
    ]
    return "\n".join(lines)


def parse_domains(values: Sequence[str] | None) -> list[str]:
    if not values:
        return list(DOMAINS)
    out: list[str] = []
    for value in values:
        for d in value.split(","):
            d = d.strip()
            if not d:
                continue
            if d in ("math", "maths"):
                d = "mathematics"
            if d not in DOMAINS:
                raise EduFairError(f"unknown domain {d!r}; choose from {', '.join(DOMAINS)}")
            if d not in out:
                out.append(d)
    return out


def build_bank(
    out_dir: str | Path,
    domains: Sequence[str] = DOMAINS,
    seed: int = DEFAULT_SEED,
    per_domain: int = DEFAULT_PER_DOMAIN,
    sciq_path: str | Path | None = None,
    gsm8k_path: str | Path | None = None,
    socrateach_path: str | Path | None = None,
    log: Callable[[str], None] = lambda _msg: None,
) -> dict[str, Any]:
    """Build the requested domains (all sources are read before anything is written)."""
    if per_domain < 0:
        raise EduFairError(f"--per-domain must be >= 0 (got {per_domain})")
    built: list[BuiltFile] = []
    science = [d for d in ("physics", "chemistry") if d in domains]
    if science:
        built += build_sciq_files(sciq_path, science, per_domain, seed, log)
    if "mathematics" in domains:
        built.append(build_math_file(gsm8k_path, socrateach_path, per_domain, seed, log))
    order = {d: i for i, d in enumerate(DOMAINS)}
    return write_bank(out_dir, sorted(built, key=lambda b: order[b.domain]), seed)
