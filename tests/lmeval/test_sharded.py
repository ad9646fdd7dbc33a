"""lm-eval's multi-process sharding, for real: ``accelerate launch --multi_gpu --num_processes 2`` on
CPU (gloo; ``ACCELERATE_USE_CPU=true``) with the tiny random-weight hf tutor (``tests/gpu/tiny_hf.py``),
student and judge on the loopback fake endpoint, against the same job in one process. HFLM shards
only when it sees one device per process; ``tests/lmeval/_lm_eval_hf_ranks.py`` makes it see them
(test only: ``torch.cuda.device_count()`` says 2 while HFLM is built, nothing else changes).

Greedy decoding and a fixed batch size: the two runs must give identical records (same documents,
doc ids, transcripts, labels, scores) and a byte-identical grid.csv / units.csv; the call counts of
both processes are summed; each question's levels stay on one process, so the student and judge
endpoints get the same requests as from one process. And the guard rails: ``--batch_size auto`` and
fewer questions than processes stop both processes at once, in one line, instead of hanging or
crashing."""

from __future__ import annotations

import json
import socket
import subprocess
import time
from pathlib import Path

import pytest

from lm_eval_tasks import TASKS_DIR
from tests.helpers.edufair_cli import PY, TASK, EduFairFake, cli_env, comparable
from tests.helpers.stored import with_provenance

pytestmark = [pytest.mark.slow, pytest.mark.hf]

HERE = Path(__file__).resolve().parent
RANKS_CLI = HERE / "_lm_eval_hf_ranks.py"
LEVELS = ["female", "male"]
QUESTIONS = 4


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _bank(d: Path) -> Path:
    d.mkdir(parents=True, exist_ok=True)
    golds = ["gravity", "friction", "inertia", "velocity"]
    with open(d / "physics.jsonl", "w") as fh:
        for i in range(QUESTIONS):
            fh.write(json.dumps({"id": f"shard-q{i}", "domain": "physics", "grade": 8, "question": f"Question {i}: which quantity?",
                                 "answer": golds[i], "answer_forms": [golds[i]], "source": "sciq"}) + "\n")
    return d


@pytest.fixture(scope="module")
def setup(tmp_path_factory):
    from tests.gpu.tiny_hf import build_tiny_chat_model

    root = tmp_path_factory.mktemp("sharded")
    return build_tiny_chat_model(root / "tiny"), _bank(root / "bank")


def _argv(processes: int, model: Path, url: str, bank: Path, out: Path, *, batch: str = "8", limit: int | None = None):
    chat = f"{url}/chat/completions"
    meta = {"edufair": {
        "student": {"model": "local-chat-completions",
                    "model_args": {"model": "fake-student", "base_url": chat, "num_concurrent": 2, "tokenized_requests": False}},
        "judge": {"base_url": url, "model": "fake-judge", "concurrency": 2},
        "bank_dir": str(bank), "max_tutor_turns": 2, "levels": LEVELS}}
    head = [PY, str(RANKS_CLI)] if processes == 1 else [
        PY, "-m", "accelerate.commands.launch", "--multi_gpu", "--num_processes", str(processes), "--num_machines", "1",
        "--mixed_precision", "no", "--dynamo_backend", "no", "--main_process_port", str(_free_port()), str(RANKS_CLI)]
    return head + [
        "run", "--model", "hf", "--model_args", f"pretrained={model},dtype=float32", "--device", "cpu", "--batch_size", batch,
        "--gen_kwargs", "max_gen_toks=8,temperature=0", "--tasks", TASK, "--include_path", str(TASKS_DIR),
        "--log_samples", "--output_path", str(out), "--metadata", json.dumps(meta),
        *(["--limit", str(limit)] if limit else []),
    ]


def _run(argv, cache: Path, cwd: Path, timeout: float = 240):
    env = cli_env(cache, ACCELERATE_USE_CPU="true", OMP_NUM_THREADS="1", TOKENIZERS_PARALLELISM="false")
    start = time.time()
    r = subprocess.run(argv, env=env, cwd=cwd, capture_output=True, text=True, timeout=timeout)
    return r, time.time() - start


def _records(out: Path) -> list[dict]:
    files = sorted(out.rglob(f"samples_{TASK}_*.jsonl"))
    assert len(files) == 1, files
    lines = [json.loads(ln) for ln in files[0].read_text().splitlines() if ln.strip()]
    recs = with_provenance(x["complete_dialogues"] for x in lines)  # the run header resolved (stored once)
    return [{**x, "complete_dialogues": r} for x, r in zip(lines, recs)]


def _report(out: Path, dest: Path) -> dict[str, bytes]:
    r = subprocess.run([PY, "-m", "edufair_metrics.cli", "report", str(out), "--out", str(dest), "--n-boot", "50",
                        "--no-figures"], capture_output=True, text=True, timeout=180, env=cli_env(dest / "cache"))
    assert r.returncode == 0, r.stderr[-2000:]
    return {name: (dest / name).read_bytes() for name in ("grid.csv", "units.csv")}


def _calls(out: Path) -> dict:
    res = json.loads(sorted(out.rglob("results_*.json"))[-1].read_text())
    return res["configs"][TASK]["metadata"]["edufair_calls"]


def test_two_processes_give_the_one_process_records_and_grid(setup, tmp_path):
    model, bank = setup
    with EduFairFake() as fake:
        one = tmp_path / "one"
        r, t1 = _run(_argv(1, model, fake.url, bank, one), tmp_path / "cache-1", tmp_path)
        assert r.returncode == 0, r.stderr[-3000:]
        served_one = {role: sum(n for (ro, _), n in fake.counts.items() if ro == role) for role in ("student", "judge")}
        fake.reset()
        two = tmp_path / "two"
        r, t2 = _run(_argv(2, model, fake.url, bank, two), tmp_path / "cache-2", tmp_path)
        assert r.returncode == 0, r.stderr[-3000:]
        served_two = {role: sum(n for (ro, _), n in fake.counts.items() if ro == role) for role in ("student", "judge")}
    print(f"[sharded] 1 process {t1:.1f} s, 2 processes {t2:.1f} s")

    a, b = _records(one), _records(two)
    assert len(a) == len(b) == QUESTIONS * len(LEVELS)
    assert sorted(x["doc_id"] for x in a) == sorted(x["doc_id"] for x in b) == list(range(QUESTIONS * len(LEVELS)))
    assert comparable([x["complete_dialogues"] for x in a]) == comparable([x["complete_dialogues"] for x in b])

    def without_execution(x):
        rec = json.loads(json.dumps(x["complete_dialogues"]))
        rec["provenance"].pop("execution")
        rec.pop("run")  # the header itself (in full or as a reference: which line of a process comes first)
        for j in rec["judgements"]:  # which of two identical judge requests was sent (1) or shared (0): thread timing
            j.pop("attempts")
        return x["doc_id"], json.dumps(rec, sort_keys=True)

    assert sorted(map(without_execution, a)) == sorted(map(without_execution, b))  # everything else identical
    ex = b[0]["complete_dialogues"]["provenance"]["execution"]
    assert ex == {"world_size": 2, "tutor_batch_size": "8", "shard": None}
    assert a[0]["complete_dialogues"]["provenance"]["execution"]["world_size"] == 1

    # each question's levels on one process: the endpoints see the one-process requests (coalescing)
    assert served_two == served_one
    # the call counts of both processes, summed into the results
    c1, c2 = _calls(one), _calls(two)
    for role in ("tutor", "student", "judge"):
        for key in ("requests", "distinct", "sends", "coalesced"):
            assert c2[role][key] == c1[role][key], (role, key)

    assert _report(one, tmp_path / "rep-1") == _report(two, tmp_path / "rep-2")


@pytest.mark.parametrize("batch, limit, expect", [
    ("auto", None, "--batch_size auto with 2 processes hangs"),
    ("8", len(LEVELS), "1 question(s) for 2 processes"),
], ids=["auto-batch", "too-few-questions"])
def test_what_would_hang_or_crash_stops_every_process_at_once(setup, tmp_path, batch, limit, expect):
    model, bank = setup
    with EduFairFake() as fake:
        r, wall = _run(_argv(2, model, fake.url, bank, tmp_path / "out", batch=batch, limit=limit), tmp_path / "cache",
                       tmp_path, timeout=180)
        assert fake.srv.calls == 0  # before any dialogue
    assert r.returncode != 0
    lines = [ln for ln in r.stderr.splitlines() if ln.startswith("edufair: error: ")]
    assert len(lines) == 2 and all(expect in ln for ln in lines), r.stderr[-3000:]  # one line from each process
    assert "Traceback" not in "\n".join(ln for ln in r.stderr.splitlines() if "edufair" in ln)


def test_a_tutor_lm_eval_does_not_shard_is_refused_under_accelerate(setup, tmp_path):
    """An API tutor (or vLLM) under ``accelerate launch`` would run the whole job in every process."""
    _, bank = setup
    from tests.helpers.edufair_cli import FAST_LM_EVAL, lm_eval_argv

    with EduFairFake() as fake:
        argv = lm_eval_argv(fake.url, bank, tmp_path / "out", limit=4)
        launch = [PY, "-m", "accelerate.commands.launch", "--multi_gpu", "--num_processes", "2", "--num_machines", "1",
                  "--mixed_precision", "no", "--dynamo_backend", "no", "--main_process_port", str(_free_port()),
                  str(FAST_LM_EVAL)]
        r, _ = _run(launch + argv[2:], tmp_path / "cache", tmp_path, timeout=180)
        assert fake.srv.calls == 0
    assert r.returncode != 0
    lines = [ln for ln in r.stderr.splitlines() if ln.startswith("edufair: error: ")]
    assert len(lines) == 2 and all("would run the whole task in every process" in ln for ln in lines), r.stderr[-3000:]
