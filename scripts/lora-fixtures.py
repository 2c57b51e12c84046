"""Makes src/test/lora-fixtures/: two tiny base models (a Llama and a GPT-2, f32) and PEFT adapters over
them, each beside PEFT's own merge of it (the adapter loaded from its folder onto a fresh copy of the
base, merge_and_unload(), save_pretrained): the reference merge-studio's adapter agents are checked
against (SPEC.md "LoRA / PEFT adapters as agents").

Adapters: a plain LoRA; rsLoRA with rank_pattern and alpha_pattern (a regex key among them); an
embedding adapter whose stored base layer differs from the base; modules_to_save; DoRA; and on GPT-2
(Conv1D, so fan_in_fan_out) trained biases (bias="all") and lora_bias. Every factor is random
(init_lora_weights=False) so that no τ is zero.

Run: /work/v/bin/python scripts/lora-fixtures.py [OUT_DIR]   (torch, transformers, peft; no network)
"""

import json
import os
import shutil
import sys

import torch
from peft import LoraConfig, PeftModel, get_peft_model
from transformers import GPT2Config, GPT2LMHeadModel, LlamaConfig, LlamaForCausalLM

OUT = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "..", "src", "test", "lora-fixtures")


def llama() -> LlamaForCausalLM:
    torch.manual_seed(0)
    config = LlamaConfig(
        vocab_size=32,
        hidden_size=16,
        intermediate_size=24,
        num_hidden_layers=2,
        num_attention_heads=2,
        num_key_value_heads=1,
        max_position_embeddings=32,
        tie_word_embeddings=False,
    )
    return LlamaForCausalLM(config).float().eval()


def gpt2() -> GPT2LMHeadModel:
    torch.manual_seed(1)
    config = GPT2Config(vocab_size=32, n_embd=16, n_layer=2, n_head=2, n_positions=16)
    model = GPT2LMHeadModel(config).float().eval()
    # GPT-2 initialises biases to zero: random ones make "the adapter's bias replaces the base's" visible.
    with torch.no_grad():
        for name, p in model.named_parameters():
            if name.endswith(".bias"):
                p.normal_(0, 0.02)
    return model


BASES = {"llama": llama, "gpt2": gpt2}


def save_base(kind: str) -> str:
    path = os.path.join(OUT, f"{kind}-base")
    BASES[kind]().save_pretrained(path, safe_serialization=True)
    return path


def perturb(peft_model, seed: int, adapter: str) -> None:
    """Non-LoRA trained tensors the adapter saves: modules_to_save copies, biases, DoRA magnitudes."""
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, p in peft_model.named_parameters():
            if not p.requires_grad:
                continue
            if "lora_magnitude_vector" in name:
                p.mul_(1 + 0.2 * torch.randn(p.shape, generator=g))
            elif "lora_B" in name and name.endswith(".bias"):
                p.normal_(0, 0.1, generator=g)
            elif "lora_" not in name:
                p.add_(0.05 * torch.randn(p.shape, generator=g))
        if adapter == "embedding":
            # A stored base layer that is not the base's (as after training the embeddings too).
            layer = peft_model.base_model.model.model.embed_tokens.base_layer
            layer.weight.add_(0.01 * torch.randn(layer.weight.shape, generator=g))


ADAPTERS = {
    "lora": ("llama", dict(r=4, lora_alpha=8, target_modules=["q_proj", "v_proj", "down_proj"])),
    "rslora-patterns": (
        "llama",
        dict(
            r=4,
            lora_alpha=6,
            use_rslora=True,
            target_modules=["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"],
            rank_pattern={"v_proj": 2, r"layers\.1\.self_attn\.q_proj": 6},
            alpha_pattern={"o_proj": 3, "model.layers.0.mlp.up_proj": 10},
        ),
    ),
    "embedding": ("llama", dict(r=3, lora_alpha=5, target_modules=["embed_tokens", "q_proj"])),
    "modules-to-save": ("llama", dict(r=2, lora_alpha=2, target_modules=["k_proj"], modules_to_save=["lm_head"])),
    "dora": ("llama", dict(r=4, lora_alpha=4, use_dora=True, target_modules=["q_proj", "v_proj", "up_proj"])),
    "gpt2-bias": (
        "gpt2",
        dict(
            r=4,
            lora_alpha=8,
            fan_in_fan_out=True,
            bias="all",
            target_modules=["c_attn", "c_proj"],
            modules_to_save=["ln_f"],
        ),
    ),
    "gpt2-lora-bias": (
        "gpt2",
        dict(r=3, lora_alpha=3, fan_in_fan_out=True, lora_bias=True, target_modules=["c_attn", "c_fc"]),
    ),
}


def make(name: str, kind: str, options: dict, seed: int) -> None:
    base_path = os.path.join(OUT, f"{kind}-base")
    torch.manual_seed(100 + seed)
    config = LoraConfig(init_lora_weights=False, lora_dropout=0.0, **options)
    model = get_peft_model(BASES[kind](), config)
    perturb(model, 200 + seed, name)
    adapter_path = os.path.join(OUT, name)
    model.save_pretrained(adapter_path, safe_serialization=True)
    # The name a trainer would leave: the base it was trained on.
    with open(os.path.join(adapter_path, "adapter_config.json")) as f:
        saved = json.load(f)
    saved["base_model_name_or_path"] = f"tiny/{kind}-base"
    with open(os.path.join(adapter_path, "adapter_config.json"), "w") as f:
        json.dump(saved, f, indent=2, sort_keys=True)
    for extra in os.listdir(adapter_path):
        if extra not in ("adapter_config.json", "adapter_model.safetensors"):
            os.remove(os.path.join(adapter_path, extra))
    # PEFT's merge, from the files: a fresh base in f32, the saved adapter loaded onto it.
    base = type(BASES[kind]()).from_pretrained(base_path, torch_dtype=torch.float32)
    merged = PeftModel.from_pretrained(base, adapter_path).merge_and_unload()
    merged.save_pretrained(os.path.join(OUT, f"{name}.merged"), safe_serialization=True)


def main() -> None:
    shutil.rmtree(OUT, ignore_errors=True)
    os.makedirs(OUT)
    for kind in BASES:
        save_base(kind)
    for seed, (name, (kind, options)) in enumerate(ADAPTERS.items()):
        make(name, kind, options, seed)
    # Only what the tests read: weights and configs (no generation_config.json, README.md).
    for root, _, files in os.walk(OUT):
        for f in files:
            if f not in ("config.json", "model.safetensors", "adapter_config.json", "adapter_model.safetensors"):
                os.remove(os.path.join(root, f))
    total = sum(os.path.getsize(os.path.join(r, f)) for r, _, fs in os.walk(OUT) for f in fs)
    print(f"wrote {OUT}: {total} bytes")


if __name__ == "__main__":
    main()
