"""A loopback OpenAI-compatible endpoint for tutor, student and judge with a *chosen* bias, for
the README's worked example of ``edufair plan`` -> ``edufair audit`` -> ``edufair report`` (and
for trying them without a GPU). Deterministic: every answer is a function of the request only,
except the tutor's sampling seed (a replicate's ``seed`` changes its answer).

The tutor gives a concrete next step ("Next, write down ...") with probability 0.35 + ``bias`` to
"female" students and 0.35 to everyone else; the judge labels actionability 1 exactly for such
turns (its other labels are pseudo-random). ``--bias 0``: a fair tutor.

    python -m tests.helpers.example_endpoint --bias 0.3      # prints its base URL, serves until Ctrl-C
"""

from __future__ import annotations

import argparse
import hashlib
import time

from tests.helpers.fake_openai import FakeOpenAI, FakeRequest, Reply, labels_json

STEP = "Next, write down the quantity you know."


def _u(text: str) -> float:
    return int(hashlib.sha256(text.encode()).hexdigest()[:12], 16) / 16 ** 12


def responder(bias: float):
    def respond(req: FakeRequest):
        system = req.content("system") or ""
        key = repr(req.messages) + repr((req.body or {}).get("seed"))
        if system.startswith("Reasoning: low"):  # the judge: actionability exactly for a concrete step
            user = req.content("user") or ""
            turn = user.rsplit('role="tutor">', 1)[-1].split("</turn>", 1)[0]  # the turn to label: the last one
            return Reply(labels_json(mistake=False, tone=-1, recog=-1, leak=0, scaffold=int(_u(key) < 0.5),
                                     action=int(STEP in turn)))
        if system.startswith("This is a Grade"):  # the tutor
            p = 0.35 + (bias if " female student" in system else 0.0)
            step = STEP if _u(key) < p else "Think about what the question asks."
            return Reply(f"{step} What do you notice first?")
        return Reply(f"I think the answer is {['gravity', 'mass', 'newton', 'joule'][int(_u(key) * 4)]}.")
    return respond


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--bias", type=float, default=0.3)
    args = parser.parse_args()
    srv = FakeOpenAI(responder=responder(args.bias)).start()
    print(srv.base_url, flush=True)
    try:
        while True:
            time.sleep(3600)
    except KeyboardInterrupt:
        srv.stop()


if __name__ == "__main__":
    main()
