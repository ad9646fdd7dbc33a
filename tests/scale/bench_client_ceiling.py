"""Benchmark (prints figures; not a test): how many requests per second ONE ``lm_eval`` process can
drive, and the CPU it spends per request and role, against a zero-latency OpenAI-compatible fake
(``tests/helpers/aio_chat.py``, its own process) -- the client's ceiling, which sets how many model
replicas one EduFair process can keep busy.

One ``lm_eval run`` per concurrency level on ``edufair_explicit_physics`` (the first ``--questions``
questions of the shipped physics bank, 9 levels each; the fake tutor never states the gold, so each
dialogue runs all ``--turns`` tutor turns): the tutor is lm-eval's ``local-chat-completions``
(``num_concurrent`` = the level), the student EduFair's lm-eval ``local-chat-completions`` (the
same), the judge EduFair's openai client (``judge.concurrency`` = the level). A fresh call cache
per run, so every request reaches the fake. CPU per role is measured on the threads that make the
calls (``_ceiling_probe.py``); ``loop`` and ``records`` are the rest of the dialogue and judging
phases, per request of the phase. ``req/s`` is the role's HTTP requests over its phase's wall time
(tutor and student share the dialogue phase and run at the same time). ``phases`` is the two
phases' CPU over every request: the steady state, which sets the ceiling of a long run.
``all-in`` is the whole process (start-up, the end-of-run statistics and writing the samples
included) over every request.

    nice -n 10 python tests/scale/bench_client_ceiling.py [--questions 40] [--turns 5] \
        [--concurrency 16 64 256] [--repeats 1] [--profile DIR]

(README quotes ``--questions 30``: ~10 minutes on a shared 2-core machine.)

``--profile DIR``: also run the middle level under py-spy (``pip install py-spy``), all threads,
and print the top functions by own time (raw folded stacks kept in DIR).
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))

from lm_eval_tasks import TASKS_DIR  # noqa: E402
from tests.cli.bench_lean_samples import _physics_bank, reply  # noqa: E402
from tests.helpers.aio_chat import ChatServer  # noqa: E402
from tests.helpers.edufair_cli import PY, TASK, cli_env  # noqa: E402

PROBE = Path(__file__).resolve().with_name("_ceiling_probe.py")


def lm_eval_argv(url: str, out: Path, bank: Path, concurrency: int, turns: int) -> list[str]:
    chat = f"{url}/chat/completions"
    student = {"model": "fake-student", "base_url": chat, "num_concurrent": concurrency, "max_retries": 3,
               "tokenized_requests": False}
    meta = {"edufair": {"student": {"model": "local-chat-completions", "model_args": student},
                        "judge": {"base_url": url, "model": "fake-judge", "concurrency": concurrency},
                        "bank_dir": str(bank), "max_tutor_turns": turns}}
    return ["run", "--model", "local-chat-completions",
            "--model_args", f"model=fake-tutor,base_url={chat},num_concurrent={concurrency},max_retries=3,"
                            "tokenized_requests=False",
            "--tasks", TASK, "--include_path", str(TASKS_DIR), "--log_samples", "--output_path", str(out),
            "--metadata", json.dumps(meta)]


def run_once(url: str, work: Path, bank: Path, concurrency: int, turns: int, spy: Path | None = None) -> dict:
    run_dir = work / f"c{concurrency}-{time.time_ns()}"
    run_dir.mkdir(parents=True)
    figures = run_dir / "probe.json"
    argv = [PY, str(PROBE), str(figures), *lm_eval_argv(url, run_dir / "out", bank, concurrency, turns)]
    if spy is not None:
        # --gil: only the thread holding the GIL is sampled, i.e. where the process's one core of
        # Python goes (without it, threads blocked in C calls -- SQLite's lock, sockets -- count too)
        argv = ["py-spy", "record", "--threads", "--gil", "--format", "raw", "--rate", "200",
                "--output", str(spy), "--", *argv]
    env = {**cli_env(run_dir / "cache"), "TQDM_DISABLE": "1"}
    r = subprocess.run(argv, env=env, cwd=run_dir, capture_output=True, text=True)
    if r.returncode != 0:
        raise SystemExit(f"lm_eval failed (exit {r.returncode}):\n{r.stderr[-3000:]}")
    return json.loads(figures.read_text())


def per_request(fig: dict) -> dict[str, tuple[int, float, float]]:
    """{row: (HTTP requests, req/s, CPU ms per request)}."""
    ph = fig["phases"]
    dia, jud = ph.get("dialogues", {"cpu_s": 0, "wall_s": 1}), ph.get("judging", {"cpu_s": 0, "wall_s": 1})
    rows = {}
    for role, phase in (("tutor", dia), ("student", dia), ("judge", jud)):
        n = fig[role].get("http", 0)
        rows[role] = (n, n / max(phase["wall_s"], 1e-9), 1000 * fig[role]["cpu_s"] / max(n, 1))
    n_dia = rows["tutor"][0] + rows["student"][0]
    rows["loop"] = (n_dia, n_dia / max(dia["wall_s"], 1e-9),
                    1000 * (dia["cpu_s"] - fig["tutor"]["cpu_s"] - fig["student"]["cpu_s"]) / max(n_dia, 1))
    n_j = rows["judge"][0]
    rows["records"] = (n_j, n_j / max(jud["wall_s"], 1e-9), 1000 * (jud["cpu_s"] - fig["judge"]["cpu_s"]) / max(n_j, 1))
    n_all = n_dia + n_j
    # the steady state: both phases' CPU over every request (no start-up, no end-of-run statistics)
    rows["phases"] = (n_all, n_all / max(dia["wall_s"] + jud["wall_s"], 1e-9),
                      1000 * (dia["cpu_s"] + jud["cpu_s"]) / max(n_all, 1))
    rows["all-in"] = (n_all, n_all / max(fig["wall_s"], 1e-9), 1000 * fig["process_cpu_s"] / max(n_all, 1))
    return rows


def top_own_time(raw: Path, n: int = 25) -> list[tuple[float, str]]:
    """py-spy's raw (folded) stacks -> the n functions with the most samples as the innermost frame
    (own time), as a share of all non-idle samples."""
    own: collections.Counter[str] = collections.Counter()
    total = 0
    for line in raw.read_text().splitlines():
        stack, _, count = line.rpartition(" ")
        if not stack or not count.isdigit():
            continue
        frames = stack.split(";")
        leaf = frames[-1]
        total += int(count)
        own[leaf] += int(count)
    return [(100 * c / max(total, 1), f) for f, c in own.most_common(n)]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--questions", type=int, default=40)
    ap.add_argument("--turns", type=int, default=5)
    ap.add_argument("--concurrency", type=int, nargs="+", default=[16, 64, 256])
    ap.add_argument("--repeats", type=int, default=1, help="runs per level (mean and spread of CPU ms/request)")
    ap.add_argument("--profile", help="folder for a py-spy profile of the middle level")
    args = ap.parse_args()
    server = ChatServer(reply, backlog=4096, client_max_size=64 * 1024 * 1024,
                        usage={"prompt_tokens": 10, "completion_tokens": 10, "total_tokens": 20})
    url = f"http://127.0.0.1:{server.start()}/v1"
    work = Path(tempfile.mkdtemp(prefix="edufair-ceiling-"))
    try:
        bank = _physics_bank(work / "bank", args.questions)
        print(f"{TASK}: {args.questions} questions x 9 levels, {args.turns} tutor turns, zero-latency fake "
              f"(own process); {os.cpu_count()} CPUs, shared and loaded: absolute rates are this machine's")
        for c in args.concurrency:
            figs = [per_request(run_once(url, work, bank, c, args.turns)) for _ in range(args.repeats)]
            print(f"\nconcurrency {c} (num_concurrent and judge.concurrency), {args.repeats} run(s)")
            print(f"  {'role':8} {'HTTP req':>9} {'req/s':>8} {'CPU ms/req':>11}")
            for row in figs[0]:
                ns = [f[row][0] for f in figs]
                rates = [f[row][1] for f in figs]
                ms = [f[row][2] for f in figs]
                spread = f" ± {statistics.stdev(ms):.2f}" if len(ms) > 1 else ""
                print(f"  {row:8} {ns[0]:9d} {statistics.mean(rates):8.0f} {statistics.mean(ms):8.2f}{spread}")
        if args.profile:
            if shutil.which("py-spy") is None:
                print("\n--profile: py-spy is not installed (pip install py-spy)", file=sys.stderr)
                return 1
            out = Path(args.profile)
            out.mkdir(parents=True, exist_ok=True)
            c = args.concurrency[len(args.concurrency) // 2]
            raw = out / f"pyspy-c{c}.txt"
            run_once(url, work, bank, c, args.turns, spy=raw)
            print(f"\npy-spy, concurrency {c}: top functions by own time (% of non-idle samples, all threads)")
            for share, frame in top_own_time(raw):
                print(f"  {share:5.1f}%  {frame}")
    finally:
        server.stop()
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
