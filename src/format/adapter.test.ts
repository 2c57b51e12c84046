// LoRA adapter configs and plans: PEFT's scaling (alpha/r, rsLoRA alpha/√r, rank_pattern and
// alpha_pattern with get_pattern_key's matching), what each adapter tensor does to the base, and a
// refusal by name, with the file and tensor, for every adapter this cannot merge exactly.
import { describe, expect, it } from 'vitest';
import {
  AdapterError,
  baseModelNote,
  parseLoraConfig,
  patternValue,
  planAdapter,
  scalingOf,
  type AdapterTensor,
} from './adapter.ts';

const config = (extra: Record<string, unknown> = {}) =>
  JSON.stringify({ peft_type: 'LORA', r: 8, lora_alpha: 16, ...extra });

const FILE = 'agent/adapter_config.json';

describe('parseLoraConfig', () => {
  it('reads r, alpha, rsLoRA, fan_in_fan_out, DoRA and the patterns in file order', () => {
    const s = parseLoraConfig(
      config({ use_rslora: true, use_dora: true, rank_pattern: { v_proj: 2, 'layers\\.1\\.q_proj': 6 } }),
      FILE,
    );
    expect(s).toEqual({
      r: 8,
      alpha: 16,
      rsLora: true,
      fanInFanOut: false,
      dora: true,
      rankPattern: [
        ['v_proj', 2],
        ['layers\\.1\\.q_proj', 6],
      ],
      alphaPattern: [],
      baseModel: null,
    });
  });

  it.each([
    [JSON.stringify({ peft_type: 'IA3' }), /is a PEFT IA3 adapter: only LoRA adapters/],
    [JSON.stringify({ peft_type: 'LOHA', r: 8 }), /is a PEFT LOHA adapter/],
    [JSON.stringify({ peft_type: 'PROMPT_TUNING' }), /PROMPT_TUNING/],
    [config({ use_qalora: true }), /uses QA-LoRA \(use_qalora\)/],
    [config({ alora_invocation_tokens: [1, 2] }), /activated LoRA/],
    [config({ layer_replication: [[0, 2]] }), /layer replication/],
    [config({ trainable_token_indices: [3] }), /trainable tokens/],
    [
      config({ init_lora_weights: 'pissa_niter_4' }),
      /initialised with pissa_niter_4, which changes the base/,
    ],
    [config({ init_lora_weights: 'olora' }), /olora/],
    [config({ loftq_config: { loftq_bits: 4 } }), /LoftQ/],
    [config({ r: 0 }), /r must be a positive integer/],
    [config({ rank_pattern: { q: -1 } }), /rank_pattern\["q"\] must be a positive number/],
    ['{"peft_type": ', /is not valid JSON/],
  ])('refuses %s by name', (text, message) => {
    expect(() => parseLoraConfig(text, FILE)).toThrow(AdapterError);
    expect(() => parseLoraConfig(text, FILE)).toThrow(message);
    expect(() => parseLoraConfig(text, FILE)).toThrow(/^agent\/adapter_config\.json: /);
  });

  it('accepts the init methods that leave the base alone', () => {
    for (const init of [true, false, 'gaussian', 'eva', 'orthogonal'])
      expect(parseLoraConfig(config({ init_lora_weights: init }), FILE).r).toBe(8);
  });
});

describe('scaling', () => {
  it('matches a pattern as PEFT does: the whole name or a dotted suffix, first key first, as a regex', () => {
    const patterns: [string, number][] = [
      ['v_proj', 2],
      ['layers\\.1\\.self_attn\\.q_proj', 6],
      ['model.layers.0.mlp.up_proj', 10],
    ];
    expect(patternValue(patterns, 'model.layers.0.self_attn.v_proj')).toBe(2);
    expect(patternValue(patterns, 'model.layers.1.self_attn.q_proj')).toBe(6);
    expect(patternValue(patterns, 'model.layers.0.self_attn.q_proj')).toBeUndefined();
    expect(patternValue(patterns, 'model.layers.0.mlp.up_proj')).toBe(10);
    // A suffix must start at a dot: xv_proj is not v_proj.
    expect(patternValue(patterns, 'model.layers.0.self_attn.xv_proj')).toBeUndefined();
    expect(patternValue([['(', 3]], 'a.(')).toBe(3);
  });

  it('is alpha / r, or alpha / √r with rsLoRA, with r and alpha per module', () => {
    const s = parseLoraConfig(
      config({ r: 4, lora_alpha: 6, rank_pattern: { v_proj: 2 }, alpha_pattern: { o_proj: 3 } }),
      FILE,
    );
    expect(scalingOf(s, 'model.layers.0.self_attn.q_proj')).toEqual({ r: 4, alpha: 6, scale: 1.5 });
    expect(scalingOf(s, 'model.layers.0.self_attn.v_proj')).toEqual({ r: 2, alpha: 6, scale: 3 });
    expect(scalingOf({ ...s, rsLora: true }, 'model.layers.0.self_attn.o_proj')).toEqual({
      r: 4,
      alpha: 3,
      scale: 1.5,
    });
  });
});

describe('planAdapter', () => {
  const base = new Map<string, number[]>([
    ['model.layers.0.self_attn.q_proj.weight', [16, 8]],
    ['model.layers.0.self_attn.q_proj.bias', [16]],
    ['model.embed_tokens.weight', [32, 8]],
    ['lm_head.weight', [32, 8]],
    ['transformer.h.0.attn.c_attn.weight', [8, 24]],
  ]);
  const shape = (n: string) => base.get(n);
  const t = (name: string, shape: number[]): AdapterTensor => ({
    name: `base_model.model.${name}`,
    dtype: 'F32',
    shape,
  });
  const q = 'model.layers.0.self_attn.q_proj';

  it('maps LoRA factors, lora_bias, embeddings, stored base layers and modules_to_save', () => {
    const settings = parseLoraConfig(config({ r: 2, lora_alpha: 4 }), FILE);
    const plan = planAdapter(
      settings,
      [
        t(`${q}.lora_A.weight`, [2, 8]),
        t(`${q}.lora_B.weight`, [16, 2]),
        t(`${q}.lora_B.bias`, [16]),
        t('model.embed_tokens.lora_embedding_A', [2, 32]),
        t('model.embed_tokens.lora_embedding_B', [8, 2]),
        t('model.embed_tokens.base_layer.weight', [32, 8]),
        t('lm_head.weight', [32, 8]),
        t('lm_head.original_module.weight', [32, 8]),
      ],
      shape,
      'a.safetensors',
    );
    expect(plan.modules.get(`${q}.weight`)).toMatchObject({
      r: 2,
      scale: 2,
      transposed: false,
      embedding: false,
    });
    expect(plan.modules.get('model.embed_tokens.weight')).toMatchObject({
      a: 'base_model.model.model.embed_tokens.lora_embedding_A',
      transposed: true,
      embedding: true,
    });
    expect([...plan.replaced]).toEqual([
      ['model.embed_tokens.weight', 'base_model.model.model.embed_tokens.base_layer.weight'],
      ['lm_head.weight', 'base_model.model.lm_head.weight'],
    ]);
    expect(plan.biases.get(`${q}.bias`)).toEqual({ tensor: `base_model.model.${q}.lora_B.bias`, scale: 2 });
  });

  it('takes A as [r, in] of a fan_in_fan_out (Conv1D) weight stored [in, out]', () => {
    const settings = parseLoraConfig(config({ r: 2, lora_alpha: 2, fan_in_fan_out: true }), FILE);
    const c = 'transformer.h.0.attn.c_attn';
    const plan = planAdapter(
      settings,
      [t(`${c}.lora_A.weight`, [2, 8]), t(`${c}.lora_B.weight`, [24, 2])],
      shape,
      'x',
    );
    expect(plan.modules.get(`${c}.weight`)?.transposed).toBe(true);
  });

  it.each([
    [
      [t(`${q}.lora_A.weight`, [2, 8])],
      /module model\.layers\.0\.self_attn\.q_proj has lora_A but not the other/,
    ],
    [
      [t(`${q}.lora_A.weight`, [3, 8]), t(`${q}.lora_B.weight`, [16, 3])],
      /do not fit model\.layers\.0\.self_attn\.q_proj\.weight \[16, 8\] at rank 2/,
    ],
    [
      [t('model.layers.9.mlp.lora_A.weight', [2, 8]), t('model.layers.9.mlp.lora_B.weight', [8, 2])],
      /adapts model\.layers\.9\.mlp\.weight, which the base does not have/,
    ],
    [
      [t('model.embed_tokens.base_layer.weight', [34, 8])],
      /has shape \[34, 8\] where the base's model\.embed_tokens\.weight has \[32, 8\]/,
    ],
    [
      [t('model.trainable_tokens_delta', [3, 8])],
      /replaces model\.trainable_tokens_delta, which the base does not have/,
    ],
    [
      [t(`${q}.lora_A.weight`, [2, 8, 1, 1]), t(`${q}.lora_B.weight`, [16, 2, 1, 1])],
      /only LoRA of linear and embedding layers .* not of a convolution/,
    ],
  ])('refuses a bad adapter, naming the tensor (%#)', (tensors, message) => {
    const settings = parseLoraConfig(config({ r: 2 }), FILE);
    expect(() => planAdapter(settings, tensors, shape, 'w.safetensors')).toThrow(message);
    expect(() => planAdapter(settings, tensors, shape, 'w.safetensors')).toThrow(
      /^w\.safetensors: tensor base_model\.model\./,
    );
  });

  it('refuses DoRA of an embedding or a fan_in_fan_out layer, and DoRA without magnitudes', () => {
    const dora = parseLoraConfig(config({ r: 2, use_dora: true }), FILE);
    expect(() =>
      planAdapter(dora, [t(`${q}.lora_A.weight`, [2, 8]), t(`${q}.lora_B.weight`, [16, 2])], shape, 'w'),
    ).toThrow(/use_dora is set but module model\.layers\.0\.self_attn\.q_proj has no lora_magnitude_vector/);
    expect(() =>
      planAdapter(
        dora,
        [
          t('model.embed_tokens.lora_embedding_A', [2, 32]),
          t('model.embed_tokens.lora_embedding_B', [8, 2]),
          t('model.embed_tokens.lora_magnitude_vector', [8]),
        ],
        shape,
        'w',
      ),
    ).toThrow(/DoRA of an embedding is not supported/);
  });
});

describe('baseModelNote', () => {
  it('says nothing where the names agree, names a quantised copy, and asks to check a different name', () => {
    expect(baseModelNote('coder', 'Qwen/Qwen2.5-7B', 'Qwen2.5-7B', [])).toBeNull();
    expect(baseModelNote('coder', 'unsloth/qwen2.5-7b-bnb-4bit', 'Qwen2.5-7B', ['Qwen2.5-7B'])).toBe(
      'coder was trained on unsloth/qwen2.5-7b-bnb-4bit, a quantised copy of qwen2.5-7b: its LoRA is applied to Qwen2.5-7B as loaded.',
    );
    expect(baseModelNote('coder', 'meta-llama/Llama-3.1-8B', 'base', ['Qwen/Qwen2.5-7B'])).toBe(
      'coder was trained on meta-llama/Llama-3.1-8B, but the base is base: check that they are the same weights.',
    );
    expect(baseModelNote('coder', null, 'base', [])).toBeNull();
  });
});
