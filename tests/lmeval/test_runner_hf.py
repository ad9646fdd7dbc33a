"""The runner with lm-eval's real ``hf`` backend (HFLM) as the tutor, on CPU, with a tiny
random-weight Llama chat model built offline in the test (tests/gpu/tiny_hf.py; no Hub access).

Unlike the fake tutors of test_runner.py (JsonChatStr contexts, like API models), HFLM renders
chats to a *string* with the tokenizer's Jinja chat template, exactly like vLLM, and tokenizes,
pads and generates in batches. On a jinja TemplateError HFLM silently drops every system message
and renders again; EduFair must refuse that (the system prompt carries the demographic cue).
"""

from __future__ import annotations


import pytest

pytest.importorskip("transformers", reason="the hf backend tests need transformers (pip install -e '.[hf]')")
pytest.importorskip("accelerate", reason="lm-eval's hf backend imports accelerate (pip install -e '.[hf]')")

from edufair_metrics.errors import EduFairError  # noqa: E402
from edufair_metrics.lmeval.task import HARNESS_PLACEHOLDER  # noqa: E402
from edufair_metrics.protocol.placebo import PLACEBO_SEED_BASE  # noqa: E402
from edufair_metrics.protocol.prompts import condition_levels, system_prompts  # noqa: E402
from edufair_metrics.records import Transcript  # noqa: E402
from tests.gpu.tiny_hf import EOT, NO_SYSTEM_TEMPLATE, build_tiny_chat_model  # noqa: E402
from tests.helpers.bank import QUESTIONS  # noqa: E402
from tests.helpers.fake_lms import STUDENTS, run_task  # noqa: E402  (registers edufair-fake-student)

pytestmark = [pytest.mark.slow, pytest.mark.hf]  # builds tiny hf models and runs real HFLM generation on CPU

TASK = "edufair_explicit_physics"
LEVELS = ["female", "male"]


@pytest.fixture(scope="module")
def tiny_model_dir(tmp_path_factory):
    return build_tiny_chat_model(tmp_path_factory.mktemp("tiny-llama"))


@pytest.fixture(scope="module")
def tiny_no_system_dir(tmp_path_factory):
    return build_tiny_chat_model(tmp_path_factory.mktemp("tiny-llama-nosys"), chat_template=NO_SYSTEM_TEMPLATE)


def make_hflm(model_dir, batch_size=8):
    from lm_eval.models.huggingface import HFLM

    return HFLM(pretrained=str(model_dir), dtype="float32", device="cpu", batch_size=batch_size)


def spy_generate_until(lm):
    """Record every generate_until call the runner makes on this HFLM: (contexts, gen_kwargs, outputs)."""
    calls = []
    real = lm.generate_until

    def counting(requests, disable_tqdm: bool = False):
        outs = real(requests, disable_tqdm=disable_tqdm)
        calls.append(([r.args[0] for r in requests], dict(requests[0].args[1]), list(outs)))
        return outs

    lm.generate_until = counting  # instance attribute: shadows the bound method
    return calls


def run(tutor, bank_dir, *, max_turns=2, limit=None):
    # The YAML asks for 2048 tokens at temperature 0.1; a random model needs only a few.
    return run_task(tutor, bank_dir, max_turns=max_turns, limit=limit, gen_kwargs="max_gen_toks=8", extra={"levels": LEVELS})


def test_hf_tutor_one_batched_call_per_turn(bank_dir, tiny_model_dir):
    lm = make_hflm(tiny_model_dir)
    calls = spy_generate_until(lm)
    hf_generate = []  # the kwargs HFLM hands to transformers' generate (after lm-eval's normalisation)
    real_model_generate = lm._model_generate

    def model_generate_spy(context, max_length, stop, **kw):
        hf_generate.append(dict(kw, attention_mask=None))
        return real_model_generate(context, max_length, stop, **kw)

    lm._model_generate = model_generate_spy
    results = run(lm, bank_dir, max_turns=2)

    n_docs = len(QUESTIONS) * len(LEVELS)
    # Two tutor turns, each ONE generate_until over all dialogues. lm-eval's own request per
    # document after the dialogues (a placeholder prompt) is answered locally: no third model call.
    assert [len(ctxs) for ctxs, _, _ in calls] == [n_docs, n_docs]
    assert [gk["max_gen_toks"] for _, gk, _ in calls] == [8, 8]
    assert not any(HARNESS_PLACEHOLDER in ctx for ctxs, _, _ in calls for ctx in ctxs)
    # YAML decoding reaches HFLM unchanged, and HFLM really samples at temperature 0.1 (lm-eval's
    # normalize_gen_kwargs adds do_sample=True when temperature > 0 and do_sample is unset, so the
    # hf backend decodes like vLLM).
    assert calls[0][1]["temperature"] == 0.1 and calls[0][1]["until"] == []
    assert [(g["do_sample"], g.get("temperature")) for g in hf_generate] == [(True, 0.1), (True, 0.1)]
    # The student answered the question, then after tutor turn 1 (not after the last).
    # (the opening answer is the same request at every level: sent once per question)
    assert [len(c) for c in STUDENTS["default"].calls] == [len(QUESTIONS), n_docs]

    # Contexts are plain strings rendered with the tokenizer's own template, containing the exact
    # tutor system prompt and the question (the tutor's own opening message).
    levels = {lv.level: lv for lv in condition_levels("explicit")}
    first_ctxs = calls[0][0]
    for i, ctx in enumerate(first_ctxs):
        assert type(ctx) is str
        q = QUESTIONS[i // len(LEVELS)]
        tutor_system = system_prompts(levels[LEVELS[i % len(LEVELS)]], "physics").tutor
        assert ctx.startswith("<|begin_of_text|><|start_header_id|>system<|end_header_id|>\n\n" + tutor_system + EOT)
        assert f"<|start_header_id|>assistant<|end_header_id|>\n\n{q['question']}{EOT}" in ctx
        assert ctx.endswith("<|start_header_id|>assistant<|end_header_id|>\n\n")
    # Turn 2 carries the tutor's own turn-1 answer back as an assistant message.
    assert calls[0][2][0].strip() in calls[1][0][0]

    recs = [s["complete_dialogues"] for s in results["samples"][TASK]]
    assert [(r["transcript"]["question_id"], r["transcript"]["level"]) for r in recs] == [
        (q["id"], lv) for q in QUESTIONS for lv in LEVELS
    ]
    for k, rec in enumerate(recs):
        t = Transcript.from_dict(rec["transcript"])
        assert t.stop_reason == "max_turns" and t.error is None
        assert [x.role for x in t.turns] == ["question", "student", "tutor", "student", "tutor"]
        tutor_turns = [x for x in t.turns if x.role == "tutor"]
        # Raw tutor text is exactly what the HF model generated (batch order restored by lm-eval).
        assert [x.raw for x in tutor_turns] == [calls[0][2][k], calls[1][2][k]]
        assert all(x.raw and x.raw.strip() for x in tutor_turns)
    assert results["results"][TASK]["failed_dialogues,judged"] == 0


def test_hf_template_that_rejects_system_fails_loudly(bank_dir, tiny_no_system_dir):
    lm = make_hflm(tiny_no_system_dir)
    calls = spy_generate_until(lm)
    # HFLM's own fallback really does drop the system message (this is what we guard against).
    rendered = lm.apply_chat_template([{"role": "system", "content": "CUE"}, {"role": "user", "content": "hi"}])
    assert "CUE" not in rendered and "hi" in rendered
    with pytest.raises(EduFairError, match="chat template dropped the system prompt"):
        run(lm, bank_dir, max_turns=1, limit=1)
    assert calls == []  # refused before any tutor generation


@pytest.fixture(scope="module")
def tiny_short_ctx_dir(tmp_path_factory):
    return build_tiny_chat_model(tmp_path_factory.mktemp("tiny-llama-short"), max_positions=200)  # < the ~220-token tutor system prompt


# lm-eval's HFLM (and its vLLM backend) LEFT-truncate a context longer than max_length -
# max_gen_toks with only a log warning, cutting the tutor system prompt (the demographic cue).
def test_hf_context_longer_than_model_is_not_silently_truncated(bank_dir, tiny_short_ctx_dir):
    lm = make_hflm(tiny_short_ctx_dir)
    calls = spy_generate_until(lm)
    budget = lm.max_length - 8  # what HFLM keeps of each context (max_gen_toks=8)
    results = run(lm, bank_dir, max_turns=2, limit=1)
    # No over-long context ever reaches the backend (it would cut the system prompt) ...
    sent = [c for ctxs, gk, _ in calls if gk["max_gen_toks"] != 1 for c in ctxs]
    assert all(len(lm.tok_encode(c)) <= budget for c in sent)
    # ... the dialogue is recorded as failed, with the reason, instead of "succeeding" blind.
    assert results["results"][TASK]["failed_dialogues,judged"] == 1
    record = results["samples"][TASK][0]["complete_dialogues"]
    assert record["transcript"]["stop_reason"] == "tutor_failed"
    assert "does not fit the tutor model's context" in record["transcript"]["error"]


def test_hf_placebo_replicate_is_sampled_under_its_own_torch_seed(bank_dir, tiny_model_dir, monkeypatch):
    """HFLM has no per-request seed (transformers' generate rejects one): the replicate's batch is
    generated right after torch.manual_seed(its seed), and no `seed` reaches transformers."""
    import torch

    lm = make_hflm(tiny_model_dir)
    seeds = []
    real_seed = torch.manual_seed
    monkeypatch.setattr(torch, "manual_seed", lambda s: (seeds.append(int(s)), real_seed(s))[1])
    hf_kwargs = []
    real_model_generate = lm._model_generate

    def model_generate_spy(context, max_length, stop, **kw):
        hf_kwargs.append(dict(kw))
        return real_model_generate(context, max_length, stop, **kw)

    lm._model_generate = model_generate_spy
    results = run_task(lm, bank_dir, max_turns=1, gen_kwargs="max_gen_toks=8",
                       extra={"levels": LEVELS, "placebo": {"level": "female", "replicates": 2}})
    recs = [s["complete_dialogues"] for s in results["samples"][TASK]]
    assert sorted({r["transcript"]["level"] for r in recs}) == ["female", "female~replicate2", "male"]
    assert PLACEBO_SEED_BASE + 2 in seeds
    assert all("seed" not in kw for kw in hf_kwargs)
