"""Benchmark (prints figures; not a test): throughput of one ``lm_eval`` process through a real
router (``vllm-router``, the ``router`` extra) against 1 and against 3 fake replicas whose requests
each take a fixed latency, so that the replicas, not the client, are the bottleneck.

Each replica (``tests/helpers/aio_chat.py``, its own process) works on ``--slots`` requests at a
time and answers each after ``--latency`` seconds: ``slots / latency`` requests per second at most,
like a server at its batch limit. The run is ``bench_client_ceiling.py``'s (tutor
``local-chat-completions``, student and judge through EduFair's clients, ``--concurrency``
requests in flight per role), with ``--questions`` questions x 9 levels and ``--turns`` tutor turns;
throughput is every HTTP request over the dialogue and judging phases' wall time. Keep the total
below the client's ceiling (``bench_client_ceiling.py``) or the client is what is measured.

    nice -n 10 python tests/scale/bench_router_scaling.py [--policy consistent_hash cache_aware] \
        [--replicas 1 3] [--questions 12] [--turns 2] [--latency 0.2] [--slots 2] [--concurrency 32] [--repeats 1]

(the defaults are what README quotes, sized for a shared 2-core machine: ~8 minutes; with
``consistent_hash`` the balance over replicas improves with the number of questions, one key each).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))

from tests.cli.bench_lean_samples import _physics_bank, reply  # noqa: E402
from tests.helpers.router import Replicas, Router, affinity  # noqa: E402
from tests.scale.bench_client_ceiling import run_once  # noqa: E402


def throughput(fig: dict) -> float:
    n = sum(fig[r].get("http", 0) for r in ("tutor", "student", "judge"))
    wall = sum(p["wall_s"] for p in fig["phases"].values())
    return n / wall


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--policy", nargs="+", default=["consistent_hash", "cache_aware"])
    ap.add_argument("--replicas", type=int, nargs="+", default=[1, 3])
    ap.add_argument("--questions", type=int, default=12)
    ap.add_argument("--turns", type=int, default=2)
    ap.add_argument("--latency", type=float, default=0.2)
    ap.add_argument("--slots", type=int, default=2)
    ap.add_argument("--concurrency", type=int, default=32)
    ap.add_argument("--repeats", type=int, default=1)
    args = ap.parse_args()
    work = Path(tempfile.mkdtemp(prefix="edufair-router-"))
    bank = _physics_bank(work / "bank", args.questions)
    cap = args.slots / args.latency
    print(f"{args.questions} questions x 9 levels, {args.turns} tutor turns; each replica {args.slots} slots x "
          f"{args.latency * 1000:.0f} ms = {cap:.0f} req/s at most; client concurrency {args.concurrency}; "
          f"shared, loaded 2-core machine")
    for policy in args.policy:
        base = None
        for n in args.replicas:
            rates, kept = [], []
            for k in range(args.repeats):
                replicas = Replicas(reply, n, work / f"{policy}-{n}-{k}" / "served", latency_s=args.latency,
                                    concurrency=args.slots, backlog=4096, client_max_size=64 * 1024 * 1024)
                with replicas, Router(replicas.urls, policy, work / f"{policy}-{n}-{k}" / "router.log") as url:
                    fig = run_once(url, work / f"{policy}-{n}-{k}", bank, args.concurrency, args.turns)
                rates.append(throughput(fig))
                aff = affinity(replicas.served())
                kept.append(sum(h for r, (h, _t) in aff.items() if r != "other")
                            / max(1, sum(t for r, (_h, t) in aff.items() if r != "other")))
            mean = statistics.mean(rates)
            sd = statistics.stdev(rates) if len(rates) > 1 else float("nan")
            base = base or mean
            print(f"  {policy:16} {n} replica(s): {mean:6.1f} ± {sd:4.1f} req/s (runs: "
                  f"{', '.join(f'{r:.1f}' for r in rates)}; {mean / (n * cap):.0%} of the replicas' capacity), "
                  f"x{mean / base:.2f} of 1 replica; turns kept on their replica {statistics.mean(kept):.1%}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
