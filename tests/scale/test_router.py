"""Through a real router (``vllm-router``, the ``router`` extra; skipped with the reason when it is
not installed): one ``lm_eval`` run (tutor ``local-chat-completions``, student and judge through
EduFair's clients) against 3 fake replicas behind the router, all on loopback, the replicas
logging which requests they serve (``tests.helpers.router.affinity``: did each request reach the
replica that served the same dialogue's previous turn?).

- cache-aware routing (the router's default policy, by prompt prefix) keeps every role's turns on
  their replica once the replicas tokenize for the router as vLLM does (``/tokenize`` and
  ``/v1/chat/completions/render``; vllm-router 0.1.17 keys its prefix tree on the tokens it gets
  there and, without them, routes by load alone: README, Scaling);
- routing on EduFair's session key (``X-Session-ID``): ``consistent_hash`` and
  ``sticky_least_loaded`` keep every request of a question on one replica;
- a replica killed mid-run loses no dialogue: its requests are retried (by the router, and by
  lm-eval and EduFair as any failed call) on the others;
- and none of it changes a record: every run gives the records of the same run through one
  server (the fakes are greedy: an answer depends on the request's messages only).

Throughput against the number of replicas is measured by ``bench_router_scaling.py``, not here.
"""

from __future__ import annotations

import collections
import json
import subprocess
import threading
import time
from pathlib import Path

import pytest

from lm_eval_tasks import TASKS_DIR

from tests.cli.bench_lean_samples import _physics_bank, reply
from tests.helpers.aio_chat import ChatServer
from tests.helpers.edufair_cli import FAST_LM_EVAL, PY, TASK, cli_env
from tests.helpers.router import Replicas, Router, affinity
from tests.helpers.stored import with_provenance

pytestmark = [pytest.mark.router, pytest.mark.slow]

QUESTIONS, TURNS = 12, 3  # 108 dialogues, ~1,100 requests a run


def run_lm_eval(url: str, work: Path, bank: Path, concurrency: int = 16) -> list[dict]:
    """One lm_eval run with every role at ``url`` (OpenAI base URL); its sample lines, by doc id."""
    chat = f"{url}/chat/completions"
    student = {"model": "fake-student", "base_url": chat, "num_concurrent": concurrency, "max_retries": 3,
               "tokenized_requests": False}
    meta = {"edufair": {"student": {"model": "local-chat-completions", "model_args": student},
                        "judge": {"base_url": url, "model": "fake-judge", "concurrency": concurrency,
                                  "max_retries": 6, "backoff_base_s": 0.2, "backoff_max_s": 2},
                        "bank_dir": str(bank), "max_tutor_turns": TURNS}}
    work.mkdir(parents=True, exist_ok=True)
    out = work / "out"
    argv = [PY, str(FAST_LM_EVAL), "run", "--model", "local-chat-completions",
            "--model_args", f"model=fake-tutor,base_url={chat},num_concurrent={concurrency},max_retries=3,"
                            "tokenized_requests=False",
            "--tasks", TASK, "--include_path", str(TASKS_DIR), "--log_samples", "--output_path", str(out),
            "--metadata", json.dumps(meta)]
    r = subprocess.run(argv, env={**cli_env(work / "cache"), "TQDM_DISABLE": "1"}, cwd=work,
                       capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr[-3000:]
    (samples,) = sorted(out.rglob(f"samples_{TASK}_*.jsonl"))
    lines = [json.loads(ln) for ln in samples.read_text().splitlines() if ln.strip()]
    # The run header is stored once per file (on whichever line came first) and referenced by the
    # others: resolve each record's full provenance in file order, then drop the header itself.
    for line, rec in zip(lines, with_provenance(ln["complete_dialogues"] for ln in lines)):
        line["complete_dialogues"] = {k: v for k, v in rec.items() if k != "run"}
    return sorted(lines, key=lambda s: s["doc_id"])


def records(lines: list[dict]) -> list[dict]:
    """Every sample line whole (the EduFair record: transcript, labels, scores, provenance; and
    lm-eval's own fields), less the two things that differ by where the servers are and how long
    they took: the judge's ``base_url`` (the router's or the one server's loopback port) and each
    role's ``wall_s``."""
    out = []
    for line in lines:
        line = json.loads(json.dumps(line))
        rec = line["complete_dialogues"]
        for judge in (rec.get("judge"), rec.get("provenance", {}).get("models", {}).get("judge")):
            if isinstance(judge, dict) and "base_url" in judge:
                judge["base_url"] = "<the judge's endpoint>"
        for counts in (line.get("failed_call_attempts") or {}).values():
            if isinstance(counts, dict):
                counts.pop("wall_s", None)
        out.append(line)
    return out


@pytest.fixture(scope="module")
def work(tmp_path_factory):
    return tmp_path_factory.mktemp("router")


@pytest.fixture(scope="module")
def bank(work):
    return _physics_bank(work / "bank", QUESTIONS)


@pytest.fixture(scope="module")
def one_server(work, bank):
    """The reference: the same run through one server, no router."""
    with ChatServer(reply, backlog=2048, client_max_size=64 * 1024 * 1024) as port:
        return run_lm_eval(f"http://127.0.0.1:{port}/v1", work / "one", bank)


def through_router(work: Path, bank: Path, name: str, policy: str, during=None):
    """The run through ``policy`` in front of 3 replicas; (sample lines, served requests, replicas).
    ``during(replicas)``: started in a thread as the run starts (e.g. to kill a replica)."""
    replicas = Replicas(reply, 3, work / name / "served", backlog=2048, client_max_size=64 * 1024 * 1024)
    with replicas:
        with Router(replicas.urls, policy, work / name / "router.log") as url:
            thread = threading.Thread(target=during, args=(replicas,), daemon=True) if during else None
            if thread:
                thread.start()
            lines = run_lm_eval(url, work / name, bank)
            if thread:
                thread.join(timeout=30)
    return lines, replicas.served(), replicas


def assert_kept(served: list[dict], floor: float = 0.95) -> dict[str, float]:
    rates = {}
    for role, (hits, total) in affinity(served).items():
        if role == "other":
            continue
        assert total > 0, role
        rates[role] = hits / total
    assert set(rates) == {"tutor", "student", "judge"}, rates
    assert all(r >= floor for r in rates.values()), rates
    return rates


def test_cache_aware_routing_keeps_each_dialogue_on_its_replica(work, bank, one_server):
    """The router's default policy, by the prompt tokens the replicas give it: every later turn of
    every role goes where the dialogue's earlier turns went. What it costs is measured, not
    asserted: requests of every question share long prefixes (the system prompts, the rubric), so
    the replica that first served them draws the new dialogues too (README, Scaling)."""
    lines, served, _ = through_router(work, bank, "cache_aware", "cache_aware")
    assert_kept(served, floor=0.95)
    assert records(lines) == records(one_server)


@pytest.mark.parametrize("policy", ["consistent_hash", "sticky_least_loaded"])
def test_session_key_routing_keeps_each_question_on_its_replica(work, bank, one_server, policy):
    lines, served, _ = through_router(work, bank, policy, policy)
    assert_kept(served, floor=1.0)  # the key is honoured: no request of a question strays
    keyed = [s for s in served if s.get("max_tokens") != 1]
    assert all(s["session"] for s in keyed)  # tutor, student and judge all send it
    replicas_of_key: dict[str, set[str]] = {}
    for s in keyed:
        replicas_of_key.setdefault(s["session"], set()).add(s["replica"])
    assert len(replicas_of_key) == QUESTIONS and all(len(r) == 1 for r in replicas_of_key.values())
    assert len({s["replica"] for s in served}) >= 2
    if policy == "sticky_least_loaded":  # a new key goes to the replica holding the fewest keys
        keys_per_replica = collections.Counter(next(iter(r)) for r in replicas_of_key.values())
        assert sorted(keys_per_replica.values()) == [QUESTIONS // 3] * 3, keys_per_replica
    assert records(lines) == records(one_server)


@pytest.mark.parametrize("policy", ["consistent_hash", "sticky_least_loaded"])
def test_killed_replica_loses_no_dialogue(work, bank, one_server, policy):
    victim = "r1"
    killed_after: dict[str, int] = {}

    def kill_mid_run(replicas: Replicas) -> None:
        log = replicas.log_dir / f"{victim}.jsonl"
        deadline = time.time() + 300
        while time.time() < deadline:  # once the victim has served a good part of its share
            n = sum(1 for _ in log.open()) if log.exists() else 0
            if n >= 60:
                replicas.kill(victim)
                killed_after[victim] = n
                return
            time.sleep(0.05)

    lines, served, _ = through_router(work, bank, f"killed-{policy}", policy, during=kill_mid_run)
    assert killed_after, "the run ended before the replica was killed"
    # the victim served part of the run, then its questions moved to the other replicas
    victims_keys = {s["session"] for s in served if s["replica"] == victim and s["session"]}
    others_keys = {s["session"] for s in served if s["replica"] != victim and s["session"]}
    assert sum(s["replica"] == victim for s in served) >= killed_after[victim] >= 60
    assert victims_keys and victims_keys <= others_keys
    # every dialogue finished and every tutor turn got its labels, exactly as through one server
    for line in lines:
        rec = line["complete_dialogues"]
        assert rec["transcript"]["stop_reason"] == "max_turns", rec["transcript"].get("error")
        # a call in flight on the killed replica may be retried (counted as retried / recovered),
        # but none fails for good
        counts = line.get("failed_call_attempts") or {}  # on the lines that carry the counts
        assert all(c["failed"] == 0 for c in counts.values() if isinstance(c, dict)), counts

    def without_counts(got: list[dict]) -> list[dict]:
        return [{k: v for k, v in line.items() if k != "failed_call_attempts"} for line in records(got)]

    # the records themselves (transcripts, labels, scores, provenance) exactly as through one server
    assert without_counts(lines) == without_counts(one_server)
