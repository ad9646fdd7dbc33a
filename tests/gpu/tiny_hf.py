"""Build a small random-weight Llama chat model entirely offline (no Hub access), for the
``hf`` backend tests (tests/lmeval/test_runner_hf.py) and the GPU check (check_runner_gpu.py).

The tokenizer is a byte-level BPE trained on the EduFair protocol prompts (so the long system
prompts tokenize compactly and every string round-trips), wrapped in ``PreTrainedTokenizerFast``
with bos/eos/pad/unk, and a Llama-3-style Jinja ``chat_template``. The model's
``generation_config`` suppresses special and whitespace-only tokens so that even a random model
always produces visible text (a blank answer is an EduFair failure, by design).
"""

from __future__ import annotations

from pathlib import Path

BOS, EOT, PAD, UNK = "<|begin_of_text|>", "<|eot_id|>", "<|pad|>", "<|unk|>"
HDR_START, HDR_END = "<|start_header_id|>", "<|end_header_id|>"
SPECIAL = [BOS, EOT, PAD, UNK, HDR_START, HDR_END]

# Llama 3 layout: <|start_header_id|>role<|end_header_id|>\n\ncontent<|eot_id|>
LLAMA3_STYLE_TEMPLATE = (
    "{{ bos_token }}"
    "{% for message in messages %}"
    "{{ '<|start_header_id|>' + message['role'] + '<|end_header_id|>\n\n' + message['content'] | trim + '<|eot_id|>' }}"
    "{% endfor %}"
    "{% if add_generation_prompt %}{{ '<|start_header_id|>assistant<|end_header_id|>\n\n' }}{% endif %}"
)

# Same layout, but the template refuses system messages (like some Gemma/Mistral templates):
# lm-eval's HFLM then silently drops every system message and renders again.
NO_SYSTEM_TEMPLATE = (
    "{% for message in messages %}"
    "{% if message['role'] == 'system' %}{{ raise_exception('System role not supported') }}{% endif %}"
    "{% endfor %}" + LLAMA3_STYLE_TEMPLATE
)


def _training_text() -> list[str]:
    """Text the BPE merges are learned from: every EduFair system prompt of every condition and
    domain (so a tutor prompt is a few hundred tokens, not thousands of bytes) plus some chat."""
    texts = ["What force pulls objects toward Earth? I am not sure, maybe it is gravity?"]
    try:
        from edufair_metrics.protocol.prompts import condition_levels, system_prompts

        for condition in ("explicit", "implicit", "opposite"):
            for lv in condition_levels(condition):
                for domain in ("physics", "math", "chemistry"):
                    p = system_prompts(lv, domain)
                    texts += [p.tutor, p.student]
    except Exception:  # noqa: BLE001 - the prompts only make tokenization shorter
        pass
    return texts


def build_tiny_chat_model(
    out_dir: str | Path,
    *,
    hidden: int = 32,
    layers: int = 2,
    heads: int = 4,
    vocab: int = 600,
    max_positions: int = 4096,
    chat_template: str = LLAMA3_STYLE_TEMPLATE,
    seed: int = 0,
) -> Path:
    """Write tokenizer + random LlamaForCausalLM (float32) to ``out_dir``; returns it."""
    import torch
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import GenerationConfig, LlamaConfig, LlamaForCausalLM, PreTrainedTokenizerFast

    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)

    tok = Tokenizer(models.BPE(unk_token=None))
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab, special_tokens=SPECIAL, initial_alphabet=pre_tokenizers.ByteLevel.alphabet(), show_progress=False
    )
    tok.train_from_iterator(_training_text(), trainer=trainer)
    fast = PreTrainedTokenizerFast(
        tokenizer_object=tok,
        bos_token=BOS,
        eos_token=EOT,
        pad_token=PAD,
        unk_token=UNK,
        model_max_length=max_positions,
    )
    fast.chat_template = chat_template
    fast.save_pretrained(out)

    torch.manual_seed(seed)
    cfg = LlamaConfig(
        vocab_size=len(fast),
        hidden_size=hidden,
        intermediate_size=hidden * 2,
        num_hidden_layers=layers,
        num_attention_heads=heads,
        num_key_value_heads=heads,
        max_position_embeddings=max_positions,
        bos_token_id=fast.bos_token_id,
        eos_token_id=fast.eos_token_id,
        pad_token_id=fast.pad_token_id,
        tie_word_embeddings=False,
    )
    model = LlamaForCausalLM(cfg).eval()
    # Never emit a special token or a whitespace-only token: a random model would otherwise
    # sometimes answer blank, which EduFair (rightly) records as a failed turn.
    banned = sorted(
        {fast.convert_tokens_to_ids(t) for t in SPECIAL}
        | {i for i in range(len(fast)) if not fast.decode([i]).strip()}
    )
    model.generation_config = GenerationConfig(
        bos_token_id=fast.bos_token_id,
        eos_token_id=fast.eos_token_id,
        pad_token_id=fast.pad_token_id,
        suppress_tokens=banned,
    )
    model.save_pretrained(out)
    return out
