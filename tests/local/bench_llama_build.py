"""Tokens/s of the installed llama-cpp-python build on the embedded SmolLM2-135M model.

    python tests/local/bench_llama_build.py [--threads N] [--repeats R]

Prints the build's compiled CPU features (llama_print_system_info), prompt-processing and
generation speed (median of R runs). Run it once per build (e.g. in two virtual environments,
one built with CMAKE_ARGS="-DGGML_NATIVE=OFF", one without) to compare a portable build with a
native one. A build that crashes is reported with its signal instead of figures.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time

CHILD = r"""
import json, sys, time
import llama_cpp
from edufair_metrics.local.server import find_embedded_model
threads, repeats = int(sys.argv[1]), int(sys.argv[2])
llm = llama_cpp.Llama(model_path=str(find_embedded_model()), n_ctx=2048, n_threads=threads,
                      n_threads_batch=threads, seed=1, verbose=False)
prompt = ("You are a Grade 8 physics tutor. A student asks why objects fall to the ground and what "
          "force is responsible. Explain step by step, ask one guiding question, and do not reveal "
          "the answer directly. ") * 6
n_prompt = len(llm.tokenize(prompt.encode()))
pp, tg = [], []
for _ in range(repeats):
    llm.reset()
    t0 = time.perf_counter(); llm.eval(llm.tokenize(prompt.encode())); pp.append(n_prompt / (time.perf_counter() - t0))
    llm.reset()
    t0 = time.perf_counter()
    out = llm(prompt, max_tokens=64, temperature=0, seed=1)
    n_gen = out["usage"]["completion_tokens"]
    total = time.perf_counter() - t0
    tg.append(n_gen / max(total - n_prompt / pp[-1], 1e-6))
print(json.dumps({"system_info": llama_cpp.llama_print_system_info().decode().strip(), "prompt_tokens": n_prompt,
                  "pp": pp, "tg": tg}))
"""


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    t0 = time.time()
    proc = subprocess.run([sys.executable, "-c", CHILD, str(args.threads), str(args.repeats)], capture_output=True, text=True)
    if proc.returncode != 0:
        from edufair_metrics.local.server import describe_exit

        print(f"build crashed: {describe_exit(proc.returncode)} after {time.time() - t0:.1f} s")
        print(proc.stderr.strip()[-500:])
        return 1
    res = json.loads(proc.stdout.strip().splitlines()[-1])
    print(f"build: {res['system_info']}")
    print(f"threads: {args.threads}, prompt: {res['prompt_tokens']} tokens, repeats: {args.repeats}")
    print(f"prompt processing: {statistics.median(res['pp']):8.1f} tok/s (median; min {min(res['pp']):.1f}, max {max(res['pp']):.1f})")
    print(f"generation:        {statistics.median(res['tg']):8.1f} tok/s (median; min {min(res['tg']):.1f}, max {max(res['tg']):.1f})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
