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

    nice -n 10 python tests/scale/bench_router_scaling.py [--policy sticky_least_loaded] \
        [--replicas 1 3] [--questions 12] [--turns 2] [--latency 0.4] [--slots 2] [--concurrency 64] \
        [--repeats 2] [--no-tokenize]

The defaults are what README quotes, sized for a shared, loaded 2-core machine (~8 minutes): 3
replicas at 2 slots x 400 ms serve 15 requests/s, well below the ~30-40 requests/s the client
reached here at zero latency (``bench_client_ceiling.py``), so the replicas are the bottleneck;
64 requests in flight per role keep all 6 slots full but for each turn's tail. Per policy and
replica count: mean ± standard deviation of the throughput over the repeats, the share of the
replicas' capacity it used, the most loaded replica's share of the requests, and the share of
turns that reached the replica of the dialogue's previous turn. ``sticky_least_loaded`` and
``consistent_hash`` route on EduFair's session key; ``cache_aware`` by prompt tokens, which the
fake replicas give the router as vLLM does (``--no-tokenize``: they do not, and it routes by load).
"""

from __future__ import annotations

import argparse
import collections
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
    ap.add_argument("--policy", nargs="+", default=["sticky_least_loaded"])
    ap.add_argument("--replicas", type=int, nargs="+", default=[1, 3])
    ap.add_argument("--questions", type=int, default=12)
    ap.add_argument("--turns", type=int, default=2)
    ap.add_argument("--latency", type=float, default=0.4)
    ap.add_argument("--slots", type=int, default=2)
    ap.add_argument("--concurrency", type=int, default=64)
    ap.add_argument("--repeats", type=int, default=2)
    ap.add_argument("--no-tokenize", action="store_true", help="replicas without /tokenize and /render")
    args = ap.parse_args()
    work = Path(tempfile.mkdtemp(prefix="edufair-router-"))
    bank = _physics_bank(work / "bank", args.questions)
    cap = args.slots / args.latency
    print(f"{args.questions} questions x 9 levels, {args.turns} tutor turns; each replica {args.slots} slots x "
          f"{args.latency * 1000:.0f} ms = {cap:.0f} req/s at most; client concurrency {args.concurrency}; "
          f"{'replicas do not tokenize; ' if args.no_tokenize else ''}shared, loaded 2-core machine")
    for policy in args.policy:
        base: list[float] = []
        for n in args.replicas:
            rates, kept, top = [], [], []
            for k in range(args.repeats):
                replicas = Replicas(reply, n, work / f"{policy}-{n}-{k}" / "served", latency_s=args.latency,
                                    concurrency=args.slots, backlog=4096, client_max_size=64 * 1024 * 1024,
                                    tokenize=not args.no_tokenize)
                with replicas, Router(replicas.urls, policy, work / f"{policy}-{n}-{k}" / "router.log") as url:
                    fig = run_once(url, work / f"{policy}-{n}-{k}", bank, args.concurrency, args.turns)
                rates.append(throughput(fig))
                served = replicas.served()
                per_replica = collections.Counter(r["replica"] for r in served)
                top.append(max(per_replica.values()) / max(1, sum(per_replica.values())))
                aff = affinity(served)
                kept.append(sum(h for r, (h, _t) in aff.items() if r != "other")
                            / max(1, sum(t for r, (_h, t) in aff.items() if r != "other")))
            mean = statistics.mean(rates)
            sd = statistics.stdev(rates) if len(rates) > 1 else float("nan")
            base = base or rates
            # the ratio to 1 replica: of the means, and its range over every pairing of runs
            lo, hi = min(rates) / max(base), max(rates) / min(base)
            print(f"  {policy:16} {n} replica(s): {mean:6.1f} ± {sd:4.1f} req/s (runs: "
                  f"{', '.join(f'{r:.1f}' for r in rates)}; {mean / (n * cap):.0%} of the replicas' capacity), "
                  f"x{mean / statistics.mean(base):.2f} of 1 replica (runs' range {lo:.2f}-{hi:.2f}); most loaded replica {statistics.mean(top):.0%} of the requests; "
                  f"turns kept on their replica {statistics.mean(kept):.1%}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
