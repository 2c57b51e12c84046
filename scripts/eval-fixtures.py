#!/usr/bin/env python3
"""Tiny test models and transformers' reference values for the evaluation (SPEC.md "Evaluation").

    /work/v/bin/python scripts/eval-fixtures.py [--out DIR] [--seed N]

Writes one Hugging Face model folder per case under DIR (default src/test/eval-fixtures), each with
`reference.json`: what transformers computes for every probe of DIR/probes.jsonl. The WGSL forward
pass and the TypeScript tokenizer are tested against these files; this script is not run in CI (it
needs torch and transformers), its outputs are committed. Rerunning it with the same seed and the
same library versions rewrites the same bytes.

The folders are written the way transformers writes them (`save_pretrained`), then a few are edited
into the older layouts that most checkpoints on the Hub still carry (rope_theta + rope_scaling at
the top of config.json; the chat template inside tokenizer_config.json, as a string or a list of
named templates). Every reference value is computed from the folder as reloaded from disk, so it is
what transformers reads from those exact bytes.
"""

from __future__ import annotations

import argparse
import json
import math
import re
import shutil
import sys
from pathlib import Path

import safetensors.torch
import tokenizers
import torch
import transformers
from tokenizers import Regex, decoders, models, normalizers, pre_tokenizers, processors, trainers
from transformers import (
    AutoModelForCausalLM,
    AutoTokenizer,
    LlamaConfig,
    LlamaForCausalLM,
    MistralConfig,
    MistralForCausalLM,
    PreTrainedTokenizerFast,
    Qwen2Config,
    Qwen2ForCausalLM,
    Qwen3Config,
    Qwen3ForCausalLM,
)

MAX_NEW_TOKENS = 8
FIT_STEPS = 200
VOCAB_SIZE = 400
SPECIAL_TOKENS = ["<s>", "</s>", "<|im_start|>", "<|im_end|>"]
BOS, EOS, IM_START, IM_END = range(4)  # the trainer gives the special tokens the first ids

# The tokenizer's training text: plain English with punctuation, digits and the probes' words, so
# the merges are real words and the probes tokenise into a mix of merged and byte-level tokens.
CORPUS = """\
The capital of France is Paris. The capital of Italy is Rome, and the capital of Spain is Madrid.
Water boils at 100 degrees Celsius and freezes at 0 degrees. Ice melts when it is warm.
Q: What is 12 + 30? A: 42. Q: What is 7 * 6? A: 42. Q: What is 100 - 58? A: 42.
Once upon a time, in a small village by the sea, there lived an old fisherman and his family.
Every morning before sunrise he went out to catch fish for his family and his friends.
The quick brown fox jumps over the lazy dog. The dog sleeps; the fox runs away!
It's 3:45 pm, isn't it? We're late, they'll wait, and I'd say you've got 10 minutes.
Numbers: 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 2024, 1999, 3.14159, 2.71828, 50%.
She said: "Hello, world!" and he answered (quietly): "Goodbye - for now..."
The model reads a prompt and writes a completion; the probe scores the completion.
A merge of two models is tested on a set of probes, one line per example.
In the morning the sea was calm, and the old man sat by the boat with his friends.
"""

LLAMA_CHAT_TEMPLATE = (
    "{{ bos_token }}{% for message in messages %}"
    "{{ '<|im_start|>' + message['role'] + '\\n' + message['content'] + '<|im_end|>' + '\\n' }}"
    "{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}"
)

# Qwen2's layout: a default system message, whitespace control and one statement per line, which
# leans on the renderer's trim_blocks / lstrip_blocks exactly as transformers sets them.
QWEN_CHAT_TEMPLATE = """\
{%- if messages[0]['role'] == 'system' %}
    {{- '<|im_start|>system\\n' + messages[0]['content'] + '<|im_end|>\\n' }}
{%- else %}
    {{- '<|im_start|>system\\nYou are a helpful assistant.<|im_end|>\\n' }}
{%- endif %}
{%- for message in messages %}
    {%- if message['role'] != 'system' %}
        {{- '<|im_start|>' + message['role'] + '\\n' + message['content'] + '<|im_end|>' + '\\n' }}
    {%- endif %}
{%- endfor %}
{%- if add_generation_prompt %}
    {{- '<|im_start|>assistant\\n' }}
{%- endif %}
"""

# Qwen2's pre-tokenizer split (digits one by one, letters with one leading non-letter).
QWEN_SPLIT = (
    r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*"
    r"|\s*[\r\n]+|\s+(?!\S)|\s+"
)

PROBES = [
    {"prompt": "The capital of France is", "completion": " Paris.", "set": "facts"},
    {"prompt": "Water boils at", "completion": " 100 degrees Celsius.", "set": "facts"},
    {"prompt": "Q: What is 12 + 30?\nA:", "completion": " 42", "set": "facts"},
    # No "set": it falls in the file's default set ("probes").
    {"prompt": "Le café est très bon, n'est-ce pas?", "completion": " Oui, c'est délicieux! ☕🙂"},
    {
        "prompt": "Once upon a time, in a small village by the sea, there lived an old fisherman who",
        "completion": " went out every morning before sunrise to catch fish for his family and friends.",
    },
    {"prompt": "It's 3:45 pm  and   the \"quick\" fox's den is empty", "completion": "... or is it?"},
]

# Strings for the tokenizer alone: edges a port can get wrong (spaces, newlines, digits, an
# added token's text inside a string, a decomposed accent that NFC composes, a literal " .").
TOKENIZER_CASES = [
    "",
    " ",
    "   leading and trailing   ",
    "a\n\nb\r\n c\t d",
    "It's 12345 or 3.14, isn't it?",
    "say <|im_end|> and </s> inline",
    "caf\u00e9 vs cafe\u0301",
    "🙂👍🏽 ok",
    "Hello , world . Don 't !",
]

# Each case: the architecture, its config, how its weights are stored, the tokenizer flavour, the
# chat template's place, and whether config.json is rewritten into the pre-v5 layout.
CASES = {
    "llama": dict(
        cls=LlamaForCausalLM,
        config=LlamaConfig,
        kwargs=dict(num_key_value_heads=2),
        dtype=torch.float32,
        tokenizer="llama",
        chat="config-string",
        legacy_config=False,
    ),
    "llama3": dict(
        cls=LlamaForCausalLM,
        config=LlamaConfig,
        kwargs=dict(
            num_key_value_heads=2,
            rope_theta=500000.0,
            rope_scaling={
                "rope_type": "llama3",
                "factor": 8.0,
                "low_freq_factor": 1.0,
                "high_freq_factor": 4.0,
                "original_max_position_embeddings": 32,
            },
            tie_word_embeddings=True,
        ),
        dtype=torch.bfloat16,
        tokenizer="llama",
        chat="config-list",
        legacy_config=True,
    ),
    "llama-linear": dict(
        cls=LlamaForCausalLM,
        config=LlamaConfig,
        kwargs=dict(
            num_key_value_heads=2,
            rope_scaling={"type": "linear", "factor": 2.0},
            attention_bias=True,
            mlp_bias=True,
        ),
        dtype=torch.float16,
        tokenizer="llama",
        chat="jinja-file",
        legacy_config=True,
    ),
    "mistral": dict(
        cls=MistralForCausalLM,
        config=MistralConfig,
        kwargs=dict(num_key_value_heads=1, sliding_window=8),
        dtype=torch.bfloat16,
        tokenizer="llama",
        chat="config-string",
        legacy_config=False,
    ),
    "qwen2": dict(
        cls=Qwen2ForCausalLM,
        config=Qwen2Config,
        kwargs=dict(num_key_value_heads=2, tie_word_embeddings=True, eos_token_id=IM_END),
        dtype=torch.bfloat16,
        tokenizer="qwen",
        chat="jinja-file",
        legacy_config=True,
        # As Qwen2.5's config.json: a sliding_window that use_sliding_window false switches off
        # (transformers then applies no window at all), and no layer_types.
        config_edits=dict(sliding_window=4, use_sliding_window=False, max_window_layers=1, layer_types=None),
    ),
    "qwen3": dict(
        cls=Qwen3ForCausalLM,
        config=Qwen3Config,
        # head_dim 32 with hidden 64 and 4 heads: q_proj is 64 → 128, o_proj 128 → 64.
        kwargs=dict(num_key_value_heads=2, head_dim=32, eos_token_id=[IM_END, EOS]),
        dtype=torch.bfloat16,
        tokenizer="qwen",
        chat="jinja-file",
        legacy_config=False,
    ),
}

COMMON_CONFIG = dict(
    hidden_size=64,
    num_hidden_layers=2,
    num_attention_heads=4,
    intermediate_size=96,
    vocab_size=VOCAB_SIZE,
    max_position_embeddings=256,
    # Large weights make the predictions decisive: argmax margins well above f32 rounding.
    initializer_range=0.2,
    rms_norm_eps=1e-6,
    bos_token_id=BOS,
    eos_token_id=EOS,
)

STORAGE = {torch.float32: "F32", torch.bfloat16: "BF16", torch.float16: "F16"}


def log(*args: object) -> None:
    print(*args, file=sys.stderr, flush=True)


# ---------------------------------------------------------------------------------------------
# Tokenizers


def train_tokenizer(flavour: str) -> tokenizers.Tokenizer:
    """A byte-level BPE over CORPUS: "llama" adds BOS by default, "qwen" adds nothing (Qwen2's
    pipeline: NFC, its split regex, then byte-level without its own regex)."""
    tok = tokenizers.Tokenizer(models.BPE())
    if flavour == "llama":
        tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)
    else:
        tok.normalizer = normalizers.NFC()
        tok.pre_tokenizer = pre_tokenizers.Sequence(
            [
                pre_tokenizers.Split(Regex(QWEN_SPLIT), behavior="isolated", invert=False),
                pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False),
            ]
        )
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=VOCAB_SIZE,
        special_tokens=SPECIAL_TOKENS,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tok.train_from_iterator(CORPUS.splitlines(keepends=True), trainer=trainer)
    for i, name in enumerate(SPECIAL_TOKENS):
        assert tok.token_to_id(name) == i, (name, tok.token_to_id(name))
    if flavour == "llama":
        tok.post_processor = processors.TemplateProcessing(
            single="<s> $A", pair="<s> $A <s> $B", special_tokens=[("<s>", BOS)]
        )
    else:
        tok.post_processor = processors.ByteLevel(trim_offsets=False)
    return tok


def save_tokenizer(tok: tokenizers.Tokenizer, flavour: str, chat: str, folder: Path) -> None:
    """Writes the tokenizer with transformers, then moves the chat template where `chat` says."""
    if flavour == "llama":
        fast = PreTrainedTokenizerFast(
            tokenizer_object=tok,
            bos_token="<s>",
            eos_token="</s>",
            chat_template=LLAMA_CHAT_TEMPLATE,
            # As Llama 2's config says; transformers ignores it for a BPE model, a port must too.
            clean_up_tokenization_spaces=True,
        )
    else:
        fast = PreTrainedTokenizerFast(
            tokenizer_object=tok,
            eos_token="<|im_end|>",
            pad_token="</s>",
            chat_template=QWEN_CHAT_TEMPLATE,
            clean_up_tokenization_spaces=False,
        )
    fast.save_pretrained(folder)
    config_path = folder / "tokenizer_config.json"
    config = json.loads(config_path.read_text())
    # transformers 5 names its own class; checkpoints name this one, and it loads the same way.
    config["tokenizer_class"] = "PreTrainedTokenizerFast"
    if flavour == "qwen":
        config["bos_token"] = None  # as Qwen2's tokenizer_config.json
    jinja = folder / "chat_template.jinja"
    if chat != "jinja-file":
        template = jinja.read_text()
        jinja.unlink()
        config["chat_template"] = (
            template
            if chat == "config-string"
            else [
                {"name": "default", "template": template},
                {"name": "tool_use", "template": "{{ raise_exception('not this one') }}"},
            ]
        )
    else:
        assert jinja.exists()
        config.pop("chat_template", None)
    write_json(config_path, config)


# ---------------------------------------------------------------------------------------------
# Models


def training_sequences(tok: tokenizers.Tokenizer, flavour: str, eos: int) -> list[list[int]]:
    """CORPUS line by line, each ended by the model's EOS, and the "facts" probes in the chat
    layout, so greedy generation stops at EOS now and then (a path the forward pass must take)."""
    seqs = [tok.encode(line).ids + [eos] for line in CORPUS.splitlines() if line.strip()]
    head = "<s>" if flavour == "llama" else "<|im_start|>system\nYou are a helpful assistant.<|im_end|>\n"
    for probe in PROBES:
        if probe.get("set") == "facts":
            text = f"{head}<|im_start|>user\n{probe['prompt']}<|im_end|>\n<|im_start|>assistant\n{probe['completion']}"
            seqs.append(tok.encode(text, add_special_tokens=False).ids + [IM_END])
    return seqs


def fit(model: torch.nn.Module, seqs: list[list[int]], steps: int) -> None:
    """A short full-batch fit to the training text: memorised text gives top-1 hits and decisive
    margins; the rest of a probe stays unpredictable. Not a language model, a test fixture."""
    width = max(len(s) for s in seqs)
    ids = torch.tensor([s + [0] * (width - len(s)) for s in seqs])
    mask = torch.tensor([[1] * len(s) + [0] * (width - len(s)) for s in seqs])
    labels = torch.where(mask.bool(), ids, torch.full_like(ids, -100))
    opt = torch.optim.Adam(model.parameters(), lr=3e-3)
    model.train()
    for _ in range(steps):
        loss = model(input_ids=ids, attention_mask=mask, labels=labels, use_cache=False).loss
        opt.zero_grad()
        loss.backward()
        opt.step()
    model.eval()
    log(f"  fitted: loss {loss.item():.3f} after {steps} steps")


def build_model(name: str, case: dict, seed: int, tok: tokenizers.Tokenizer) -> torch.nn.Module:
    torch.manual_seed(seed * 1000 + list(CASES).index(name))
    kwargs = {**COMMON_CONFIG, **case["kwargs"]}
    config = case["config"](**kwargs)
    model = case["cls"](config).eval()
    with torch.no_grad():
        for pname, param in model.named_parameters():
            if pname.endswith("norm.weight"):
                # Not all ones: a port that forgets a norm's weight must fail.
                param.copy_(1.0 + 0.1 * torch.randn_like(param))
            elif pname.endswith(".bias"):
                # transformers initialises biases to zero, which would test nothing.
                param.copy_(0.1 * torch.randn_like(param))
            else:
                param.copy_(config.initializer_range * torch.randn_like(param))
    if config.tie_word_embeddings:
        assert model.lm_head.weight.data_ptr() == model.model.embed_tokens.weight.data_ptr()
    eos = config.eos_token_id[0] if isinstance(config.eos_token_id, list) else config.eos_token_id
    fit(model, training_sequences(tok, case["tokenizer"], eos), FIT_STEPS)
    return model.to(case["dtype"])


def save_model(model: torch.nn.Module, case: dict, folder: Path) -> None:
    model.save_pretrained(folder, safe_serialization=True)
    if case["legacy_config"]:
        # The pre-v5 layout of config.json: rope_theta and rope_scaling at the top level,
        # torch_dtype instead of dtype. transformers 5 reads it into the same rope_parameters.
        path = folder / "config.json"
        config = json.loads(path.read_text())
        rope = dict(config.pop("rope_parameters"))
        config["rope_theta"] = rope.pop("rope_theta")
        if rope.get("rope_type") == "default":
            rope = None
        elif rope.get("rope_type") == "linear":
            rope = {"type": "linear", "factor": rope["factor"]}  # the oldest spelling
        else:
            rope.pop("type", None)
        config["rope_scaling"] = rope
        if "dtype" in config:
            config["torch_dtype"] = config.pop("dtype")
        for key, value in case.get("config_edits", {}).items():
            if value is None:
                config.pop(key, None)
            else:
                config[key] = value
        write_json(path, dict(sorted(config.items())))


def perturb_agent(base: Path, out: Path, seed: int) -> None:
    """A copy of `base` with sparse bf16 changes, as an RL fine-tune leaves them: in some tensors a
    random ~10% of elements moves, half by 1–4 ulps, half by up to 1e-2."""
    shutil.copytree(base, out)
    (out / "reference.json").unlink(missing_ok=True)
    path = out / "model.safetensors"
    tensors = safetensors.torch.load_file(path)
    g = torch.Generator().manual_seed(seed)
    changed = total = 0
    for name in sorted(tensors):
        t = tensors[name]
        assert t.dtype == torch.bfloat16, name
        total += t.numel()
        if torch.rand((), generator=g) < 0.3:  # this tensor is left as the base's
            continue
        flat = t.flatten().clone()
        chosen = torch.rand(flat.shape, generator=g) < 0.1
        by_ulps = torch.rand(flat.shape, generator=g) < 0.5
        ulps = torch.randint(1, 5, flat.shape, generator=g, dtype=torch.int16)
        ulps = torch.where(torch.rand(flat.shape, generator=g) < 0.5, ulps, -ulps)
        # ±k in the bit pattern moves the magnitude by k ulps (no value here is near 0 or inf).
        stepped = (flat.view(torch.int16) + ulps).view(torch.bfloat16)
        delta = (torch.rand(flat.shape, generator=g) * 2 - 1) * 1e-2
        shifted = (flat.float() + delta).to(torch.bfloat16)
        flat = torch.where(chosen & by_ulps, stepped, torch.where(chosen, shifted, flat))
        tensors[name] = flat.view(t.shape).contiguous()
        changed += int((flat.view(torch.int16) != t.flatten().view(torch.int16)).sum())
    log(f"  {out.name}: {changed} of {total} stored values changed")
    safetensors.torch.save_file(tensors, path, metadata={"format": "pt"})


# ---------------------------------------------------------------------------------------------
# Reference values


def f32(x: float) -> float:
    """An f32 value as the shortest decimal that reads back as the same f32."""
    return float(f"{x:.9g}")


def round6(x: float) -> float:
    """A margin to 6 significant digits: it only says how near a tie was."""
    return float(f"{x:.6g}")


def top2(row: torch.Tensor) -> tuple[int, float]:
    """argmax (ties: the lowest id) and the margin over the second-highest logit."""
    best = int(torch.argmax(row))  # torch returns the first maximal index
    assert row[best] == row.max() and bool((row[:best] < row[best]).all())
    values = torch.topk(row.double(), 2).values
    return best, float(values[0] - values[1])


@torch.no_grad()
def logits_of(model: torch.nn.Module, ids: list[int]) -> torch.Tensor:
    out = model(input_ids=torch.tensor([ids]), use_cache=False).logits[0]
    assert out.dtype == torch.float32
    return out


@torch.no_grad()
def score(model, tok, prompt_ids: list[int], completion_ids: list[int], eos: set[int]) -> dict:
    seq = prompt_ids + completion_ids
    logits = logits_of(model, seq)
    logp = logits.double().log_softmax(-1)
    logprobs, argmax, margins = [], [], []
    for j in range(len(prompt_ids), len(seq)):
        best, margin = top2(logits[j - 1])
        logprobs.append(float(logp[j - 1, seq[j]]))
        argmax.append(best)
        margins.append(round6(margin))
    nll = -math.fsum(logprobs)
    top1 = sum(a == t for a, t in zip(argmax, completion_ids))

    # Self-check: each completion position scored again from its own prefix alone gives the same
    # log-probability (causal attention: nothing after j−1 reaches row j−1).
    stepwise = []
    for j in range(len(prompt_ids), len(seq)):
        row = logits_of(model, seq[:j])[-1]
        stepwise.append(float(row.double().log_softmax(-1)[seq[j]]))
        assert top2(row)[0] == argmax[len(stepwise) - 1] or margins[len(stepwise) - 1] < 1e-4
    assert abs(-math.fsum(stepwise) - nll) <= 1e-4 * max(1.0, abs(nll)), (nll, -math.fsum(stepwise))
    # Self-check: transformers' own loss over the completion labels is the mean of the same terms.
    labels = torch.tensor([[-100] * len(prompt_ids) + completion_ids])
    loss = float(model(input_ids=torch.tensor([seq]), labels=labels, use_cache=False).loss)
    assert abs(loss * len(completion_ids) - nll) <= 1e-4 * max(1.0, abs(nll)), (loss, nll)

    generated, gen_margins = [], []
    ids = list(prompt_ids)
    for _ in range(MAX_NEW_TOKENS):
        best, margin = top2(logits_of(model, ids)[-1])
        generated.append(best)
        gen_margins.append(round6(margin))
        ids.append(best)
        if best in eos:
            break
    # Self-check against transformers' own greedy search (KV cache): same ids, unless a step is a
    # near tie that the cache's different rounding may flip.
    out = model.generate(
        torch.tensor([prompt_ids]),
        attention_mask=torch.ones(1, len(prompt_ids), dtype=torch.long),
        max_new_tokens=MAX_NEW_TOKENS,
        do_sample=False,
        eos_token_id=sorted(eos),
        pad_token_id=EOS,
    )[0, len(prompt_ids) :].tolist()
    if out != generated:
        assert min(gen_margins) < 1e-4, (out, generated, gen_margins)
        log(f"  note: generate() differs at a near tie: {out} vs {generated}")

    return {
        "promptIds": prompt_ids,
        "completionIds": completion_ids,
        "nll": nll,
        "top1": top1,
        "logprobs": logprobs,
        "argmax": argmax,
        "margins": margins,
        "generated": generated,
        "generatedMargins": gen_margins,
        "generatedText": tok.decode(generated),
        "generatedTextSkipSpecial": tok.decode(generated, skip_special_tokens=True),
    }


def check_tokenizer(tok, folder: Path) -> None:
    """transformers' ids equal the tokenizers library's own on the saved tokenizer.json: nothing in
    transformers' loading replaced a part of the pipeline."""
    raw = tokenizers.Tokenizer.from_file(str(folder / "tokenizer.json"))
    for text in TOKENIZER_CASES + [p["prompt"] for p in PROBES] + [p["completion"] for p in PROBES]:
        assert tok(text).input_ids == raw.encode(text).ids, text
        assert tok(text, add_special_tokens=False).input_ids == raw.encode(text, add_special_tokens=False).ids


@torch.no_grad()
def check_window(model, config, seq: list[int]) -> None:
    """Mistral's sliding window as transformers applies it: row i attends keys j with
    i − window < j ≤ i, so with L layers token 0 reaches rows ≤ L·(window − 1) and no further."""
    window, layers = config.sliding_window, config.num_hidden_layers
    reach = layers * (window - 1)
    assert len(seq) > reach + 1, f"the long probe has {len(seq)} tokens, the window needs > {reach + 1}"
    a = logits_of(model, seq)
    b = logits_of(model, [(seq[0] + 7) % config.vocab_size] + seq[1:])
    diff = (a - b).abs().amax(-1)
    assert float(diff[reach]) > 0 and float(diff[reach + 1 :].max()) == 0, diff.tolist()
    log(f"  sliding window {window}: token 0 reaches row {reach} and no further (checked)")


def reference(folder: Path, name: str, case: dict, seed: int) -> dict:
    tok = AutoTokenizer.from_pretrained(folder)
    model = AutoModelForCausalLM.from_pretrained(folder, dtype=torch.float32, attn_implementation="eager").eval()
    assert type(model) is case["cls"], (type(model), case["cls"])
    check_tokenizer(tok, folder)

    # The stored weights widen to f32 exactly.
    stored = safetensors.torch.load_file(folder / "model.safetensors")
    params = dict(model.named_parameters())
    for key, value in stored.items():
        assert value.dtype == case["dtype"], (key, value.dtype)
        assert torch.equal(params[key].data, value.float()), key

    eos = model.generation_config.eos_token_id
    eos = set(eos if isinstance(eos, list) else [eos])
    probes = []
    for i, probe in enumerate(PROBES):
        prompt, completion = probe["prompt"], probe["completion"]
        completion_ids = tok(completion, add_special_tokens=False).input_ids
        plain = score(model, tok, tok(prompt).input_ids, completion_ids, eos)
        chat_text = tok.apply_chat_template(
            [{"role": "user", "content": prompt}], add_generation_prompt=True, tokenize=False
        )
        chat = score(model, tok, tok(chat_text, add_special_tokens=False).input_ids, completion_ids, eos)
        entry = {
            "index": i,
            "set": probe.get("set", "probes"),
            "prompt": prompt,
            "completion": completion,
            "plain": plain,
            "chat": {"promptText": chat_text, **chat},
        }
        probes.append(entry)
        if i == 0:
            # One whole logits row, for debugging a forward pass value by value.
            row = logits_of(model, plain["promptIds"])[-1]
            debug = {"probe": 0, "mode": "plain", "row": len(plain["promptIds"]) - 1, "logits": [f32(v) for v in row.tolist()]}

    # Qwen2 and Qwen3 apply a window only where use_sliding_window is true (never here); Mistral
    # wherever sliding_window is set.
    window = getattr(model.config, "sliding_window", None)
    assert (window is not None) == (type(model) is MistralForCausalLM), (name, window)
    if window is not None:
        long = max(probes, key=lambda p: len(p["plain"]["promptIds"]) + len(p["plain"]["completionIds"]))
        check_window(model, model.config, long["plain"]["promptIds"] + long["plain"]["completionIds"])

    cases = []
    for text in TOKENIZER_CASES:
        ids = tok(text).input_ids
        cases.append(
            {
                "text": text,
                "ids": ids,
                "idsNoSpecial": tok(text, add_special_tokens=False).input_ids,
                "decoded": tok.decode(ids),
                "decodedSkipSpecial": tok.decode(ids, skip_special_tokens=True),
            }
        )

    margins = [m for p in probes for mode in ("plain", "chat") for m in p[mode]["margins"] + p[mode]["generatedMargins"]]
    log(f"  {name}: {len(probes)} probes, smallest margin {min(margins):.3g}, eos {sorted(eos)}")
    return {
        "generator": {
            "script": "scripts/eval-fixtures.py",
            "seed": seed,
            "torch": torch.__version__,
            "transformers": transformers.__version__,
            "tokenizers": tokenizers.__version__,
        },
        "model": name,
        "architecture": type(model).__name__,
        "storageDtype": STORAGE[case["dtype"]],
        "configLayout": "legacy" if case["legacy_config"] else "v5",
        "chatTemplateSource": case["chat"],
        "vocabSize": model.config.vocab_size,
        # The window transformers applied (keys j with i − window < j ≤ i), null for none.
        "slidingWindow": window,
        "eosIds": sorted(eos),
        "maxNewTokens": MAX_NEW_TOKENS,
        "probes": probes,
        "tokenizerCases": cases,
        "debugLogits": debug,
    }


# ---------------------------------------------------------------------------------------------


def write_json(path: Path, value: object) -> None:
    path.write_text(json.dumps(value, indent=2, ensure_ascii=False) + "\n")


NUMBER_LIST = re.compile(r"\[\s*(-?[0-9][-0-9.eE+]*(?:,\s*-?[0-9][-0-9.eE+]*)*)\s*\]")


def write_reference(path: Path, value: object) -> None:
    """Indented JSON with each list of numbers on one line: a third of the size, still diffable."""
    text = json.dumps(value, indent=2, ensure_ascii=False)
    text = NUMBER_LIST.sub(lambda m: "[" + ", ".join(x.strip() for x in m.group(1).split(",")) + "]", text)
    path.write_text(text + "\n")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", default="src/test/eval-fixtures")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    torch.use_deterministic_algorithms(True)
    torch.set_num_threads(1)  # one thread: the same sums in the same order on every run

    out = Path(args.out)
    if out.exists():
        shutil.rmtree(out)
    out.mkdir(parents=True)
    with (out / "probes.jsonl").open("w") as f:
        for probe in PROBES:
            f.write(json.dumps(probe, ensure_ascii=False) + "\n")

    flavours = {flavour: train_tokenizer(flavour) for flavour in ("llama", "qwen")}
    for name, case in CASES.items():
        folder = out / name
        log(f"{name}:")
        model = build_model(name, case, args.seed, flavours[case["tokenizer"]])
        save_model(model, case, folder)
        save_tokenizer(flavours[case["tokenizer"]], case["tokenizer"], case["chat"], folder)
        write_reference(folder / "reference.json", reference(folder, name, case, args.seed))

    # The merge set: the qwen2 model as base and two sparse fine-tunes of it.
    sets = out / "qwen2-set"
    shutil.copytree(out / "qwen2", sets / "base")
    for k in range(2):
        agent = sets / f"agent-{k}"
        perturb_agent(sets / "base", agent, args.seed * 1000 + 100 + k)
        log(f"qwen2-set/agent-{k}:")
        ref = reference(agent, f"qwen2-set/agent-{k}", CASES["qwen2"], args.seed)
        write_reference(agent / "reference.json", ref)
    base_ref = json.loads((sets / "base" / "reference.json").read_text())
    base_ref["model"] = "qwen2-set/base"
    write_reference(sets / "base" / "reference.json", base_ref)

    total = sum(p.stat().st_size for p in out.rglob("*") if p.is_file())
    log(f"wrote {out} ({total / 1e6:.2f} MB)")


if __name__ == "__main__":
    main()
