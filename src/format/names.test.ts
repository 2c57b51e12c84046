import { describe, expect, it } from 'vitest';
import { compareModules, comparePlaces, parseTensorName, rowKey, rowLabel } from './names.ts';

const place = (name: string): [string, number | null, string, number | null] => {
  const p = parseTensorName(name);
  return [p.block, p.layer, p.module, p.expert];
};

describe('parseTensorName', () => {
  // Names as the families' Hugging Face checkpoints store them.
  it.each([
    // Llama / Mistral / Qwen2 (q/k/v biases) / Qwen3 (q_norm, k_norm)
    ['model.embed_tokens.weight', 'embed', null, 'embed'],
    ['model.layers.0.input_layernorm.weight', 'layer', 0, 'norm_in'],
    ['model.layers.0.self_attn.q_proj.weight', 'layer', 0, 'q'],
    ['model.layers.0.self_attn.q_proj.bias', 'layer', 0, 'q'],
    ['model.layers.11.self_attn.k_proj.weight', 'layer', 11, 'k'],
    ['model.layers.11.self_attn.v_proj.bias', 'layer', 11, 'v'],
    ['model.layers.31.self_attn.o_proj.weight', 'layer', 31, 'o'],
    ['model.layers.5.self_attn.q_norm.weight', 'layer', 5, 'q_norm'],
    ['model.layers.5.self_attn.k_norm.weight', 'layer', 5, 'k_norm'],
    ['model.layers.79.post_attention_layernorm.weight', 'layer', 79, 'norm_post_attn'],
    ['model.layers.2.mlp.gate_proj.weight', 'layer', 2, 'gate'],
    ['model.layers.2.mlp.up_proj.weight', 'layer', 2, 'up'],
    ['model.layers.2.mlp.down_proj.weight', 'layer', 2, 'down'],
    ['model.norm.weight', 'final', null, 'norm'],
    ['lm_head.weight', 'head', null, 'head'],
    // Gemma 2/3: four norms per layer
    ['model.layers.3.pre_feedforward_layernorm.weight', 'layer', 3, 'norm_pre_mlp'],
    ['model.layers.3.post_feedforward_layernorm.weight', 'layer', 3, 'norm_post_mlp'],
    // GPT-2
    ['transformer.wte.weight', 'embed', null, 'embed'],
    ['transformer.wpe.weight', 'embed', null, 'pos_embed'],
    ['transformer.h.0.ln_1.weight', 'layer', 0, 'norm_in'],
    ['transformer.h.0.attn.c_attn.weight', 'layer', 0, 'qkv'],
    ['transformer.h.0.attn.c_proj.bias', 'layer', 0, 'o'],
    ['transformer.h.0.attn.bias', 'layer', 0, 'attn'],
    ['transformer.h.0.ln_2.bias', 'layer', 0, 'norm_post_attn'],
    ['transformer.h.10.mlp.c_fc.weight', 'layer', 10, 'up'],
    ['transformer.h.10.mlp.c_proj.weight', 'layer', 10, 'down'],
    ['transformer.ln_f.weight', 'final', null, 'norm'],
    // Phi-2 and Phi-3
    ['model.layers.4.self_attn.dense.weight', 'layer', 4, 'o'],
    ['model.layers.4.mlp.fc1.weight', 'layer', 4, 'up'],
    ['model.layers.4.mlp.fc2.bias', 'layer', 4, 'down'],
    ['model.final_layernorm.weight', 'final', null, 'norm'],
    ['model.layers.4.self_attn.qkv_proj.weight', 'layer', 4, 'qkv'],
    ['model.layers.4.mlp.gate_up_proj.weight', 'layer', 4, 'gate_up'],
    // Falcon
    ['transformer.word_embeddings.weight', 'embed', null, 'embed'],
    ['transformer.h.7.self_attention.query_key_value.weight', 'layer', 7, 'qkv'],
    ['transformer.h.7.self_attention.dense.weight', 'layer', 7, 'o'],
    ['transformer.h.7.mlp.dense_h_to_4h.weight', 'layer', 7, 'up'],
    ['transformer.h.7.mlp.dense_4h_to_h.weight', 'layer', 7, 'down'],
    ['transformer.h.7.ln_attn.weight', 'layer', 7, 'norm_in'],
    ['transformer.h.7.ln_mlp.bias', 'layer', 7, 'norm_pre_mlp'],
    // Meta's original Llama layout
    ['tok_embeddings.weight', 'embed', null, 'embed'],
    ['layers.9.attention.wq.weight', 'layer', 9, 'q'],
    ['layers.9.attention.wo.weight', 'layer', 9, 'o'],
    ['layers.9.feed_forward.w1.weight', 'layer', 9, 'gate'],
    ['layers.9.feed_forward.w2.weight', 'layer', 9, 'down'],
    ['layers.9.feed_forward.w3.weight', 'layer', 9, 'up'],
    ['layers.9.attention_norm.weight', 'layer', 9, 'norm_in'],
    ['layers.9.ffn_norm.weight', 'layer', 9, 'norm_pre_mlp'],
    ['norm.weight', 'final', null, 'norm'],
    ['output.weight', 'head', null, 'head'],
    // The demo policy
    ['task_embed.weight', 'embed', null, 'embed'],
    ['layers.0.weight', 'layer', 0, 'weight'],
    ['layers.1.bias', 'layer', 1, 'bias'],
    ['head.weight', 'head', null, 'head'],
    ['head.bias', 'head', null, 'head'],
    // Names no rule knows keep their own path
    ['scale', 'other', null, 'scale'],
    ['model.rotary_emb.inv_freq', 'other', null, 'model.rotary_emb.inv_freq'],
    ['encoder.layer.2.attention.self.query.weight', 'layer', 2, 'attention.self.query'],
  ])('%s → %s %s %s', (name, block, layer, module) => {
    expect(place(name)).toEqual([block, layer, module, null]);
  });

  it.each([
    // Mixtral
    ['model.layers.1.block_sparse_moe.gate.weight', 'router', null],
    ['model.layers.1.block_sparse_moe.experts.0.w1.weight', 'experts.gate', 0],
    ['model.layers.1.block_sparse_moe.experts.7.w2.weight', 'experts.down', 7],
    ['model.layers.1.block_sparse_moe.experts.3.w3.weight', 'experts.up', 3],
    // Qwen2-MoE / Qwen3-MoE / DeepSeek
    ['model.layers.2.mlp.gate.weight', 'router', null],
    ['model.layers.2.mlp.experts.59.gate_proj.weight', 'experts.gate', 59],
    ['model.layers.2.mlp.experts.12.up_proj.weight', 'experts.up', 12],
    ['model.layers.2.mlp.experts.12.down_proj.weight', 'experts.down', 12],
    ['model.layers.2.mlp.shared_expert.gate_proj.weight', 'shared.gate', null],
    ['model.layers.2.mlp.shared_experts.down_proj.weight', 'shared.down', null],
    ['model.layers.2.mlp.shared_expert_gate.weight', 'shared.router', null],
  ])('MoE %s → %s (expert %s)', (name, module, expert) => {
    const p = parseTensorName(name);
    expect([p.block, p.module, p.expert]).toEqual(['layer', module, expert]);
  });

  it('keeps each stack of layers apart (a vision tower beside the language model)', () => {
    const vision = parseTensorName('vision_tower.encoder.layers.3.self_attn.q_proj.weight');
    const text = parseTensorName('language_model.model.layers.3.self_attn.q_proj.weight');
    expect([vision.stack, text.stack]).toEqual([
      'vision_tower.encoder.layers',
      'language_model.model.layers',
    ]);
    expect(rowKey(vision)).not.toBe(rowKey(text));
    expect(rowLabel(text)).toBe('layers.3');
    expect(rowLabel(parseTensorName('transformer.h.12.ln_1.weight'))).toBe('h.12');
  });
});

describe('ordering', () => {
  it('sorts embeddings, layers numerically, final norm, head, then anything else', () => {
    const names = [
      'lm_head.weight',
      'model.layers.10.mlp.up_proj.weight',
      'model.norm.weight',
      'rotary.inv_freq',
      'model.layers.2.mlp.up_proj.weight',
      'model.embed_tokens.weight',
      'model.layers.23.mlp.up_proj.weight',
    ];
    const places = names.map((name) => ({ name, place: parseTensorName(name) }));
    const sorted = places
      .sort((a, b) => comparePlaces(a.place, b.place, ['model.layers']))
      .map((p) => p.name);
    expect(sorted).toEqual([
      'model.embed_tokens.weight',
      'model.layers.2.mlp.up_proj.weight',
      'model.layers.10.mlp.up_proj.weight',
      'model.layers.23.mlp.up_proj.weight',
      'model.norm.weight',
      'lm_head.weight',
      'rotary.inv_freq',
    ]);
  });

  it('puts known modules in compute order and unknown paths after them, first seen first', () => {
    const seen = ['weight', 'down', 'bias', 'q', 'norm_in', 'up'];
    expect([...seen].sort((a, b) => compareModules(a, b, seen))).toEqual([
      'norm_in',
      'q',
      'up',
      'down',
      'weight',
      'bias',
    ]);
  });
});
