// The forward pass's reading of config.json: the families it runs, the ones it refuses by name, and the
// rotary frequencies and tables against transformers' own LlamaRotaryEmbedding (rope-reference.json,
// made by transformers 5.18 with torch 2.13: none, linear ×2, llama3 ×8 at positions up to 4095).

import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { EvalError, forwardSpec, inverseFrequencies, ropeTables } from './config.ts';

interface RopeCase {
  config: Record<string, unknown>;
  inv_freq: number[];
  positions: number[];
  cos: number[][];
  sin: number[][];
}
const reference = JSON.parse(
  readFileSync(new URL('./rope-reference.json', import.meta.url), 'utf8'),
) as Record<string, RopeCase>;

const llama = (extra: Record<string, unknown> = {}) => ({
  architectures: ['LlamaForCausalLM'],
  hidden_size: 64,
  num_attention_heads: 4,
  num_key_value_heads: 2,
  num_hidden_layers: 2,
  intermediate_size: 96,
  vocab_size: 300,
  rms_norm_eps: 1e-5,
  ...extra,
});

describe('forwardSpec', () => {
  it('reads the widths, GQA, head_dim and eos ids', () => {
    const spec = forwardSpec('m', llama({ eos_token_id: [2, 7], head_dim: 32 }));
    expect(spec).toMatchObject({
      family: 'llama',
      hidden: 64,
      heads: 4,
      kvHeads: 2,
      headDim: 32,
      eosIds: [2, 7],
    });
    expect(forwardSpec('m', llama()).headDim).toBe(16);
  });

  it('runs Qwen3 with its q/k norms and Mistral with its window', () => {
    expect(forwardSpec('q', llama({ architectures: ['Qwen3ForCausalLM'] })).qkNorm).toBe(true);
    expect(forwardSpec('m', llama({ architectures: ['MistralForCausalLM'], sliding_window: 8 })).window).toBe(
      8,
    );
    expect(forwardSpec('m', llama({ architectures: ['Qwen2ForCausalLM'], sliding_window: 8 })).window).toBe(
      0,
    );
  });

  it.each([
    [{ architectures: ['GPT2LMHeadModel'] }, /is a GPT2LMHeadModel; evaluation runs LlamaForCausalLM/],
    [{ hidden_act: 'gelu' }, /hidden_act is "gelu"/],
    [{ rope_scaling: { rope_type: 'yarn', factor: 4 } }, /rope type "yarn" is not supported/],
    [{ num_key_value_heads: 3 }, /not a multiple of num_key_value_heads 3/],
    [{ use_sliding_window: true }, /use_sliding_window/],
    [{ hidden_size: 0 }, /hidden_size is 0/],
    [{ partial_rotary_factor: 0.5 }, /partial_rotary_factor 0.5/],
    [{ layer_types: ['full_attention', 'sliding_attention'] }, /"sliding_attention" layers/],
  ])('refuses %j by name', (extra, message) => {
    expect(() => forwardSpec('folder/x', llama(extra))).toThrow(EvalError);
    expect(() => forwardSpec('folder/x', llama(extra))).toThrow(message);
    expect(() => forwardSpec('folder/x', llama(extra))).toThrow(/^folder\/x: /);
  });

  it('refuses a folder without config.json', () => {
    expect(() => forwardSpec('x', undefined)).toThrow(/has no config.json/);
  });
});

describe('rotary frequencies and tables = transformers', () => {
  it.each(Object.keys(reference))('%s', (name) => {
    const ref = reference[name]!;
    const spec = forwardSpec(name, { architectures: ['LlamaForCausalLM'], ...ref.config });
    const inv = inverseFrequencies(spec);
    expect(inv.length).toBe(ref.inv_freq.length);
    // torch's float32 pow may differ from a correctly rounded one by an ulp.
    inv.forEach((v, i) =>
      expect(Math.abs(v - ref.inv_freq[i]!)).toBeLessThanOrEqual(2 ** -22 * ref.inv_freq[i]!),
    );
    const { cos, sin } = ropeTables(inv, Int32Array.from(ref.positions));
    const half = inv.length;
    ref.positions.forEach((_, r) => {
      for (let i = 0; i < half; i++) {
        expect(Math.abs(cos[r * half + i]! - ref.cos[r]![i]!)).toBeLessThan(
          2e-6 * Math.max(1, ref.positions[r]!),
        );
        expect(Math.abs(sin[r * half + i]! - ref.sin[r]![i]!)).toBeLessThan(
          2e-6 * Math.max(1, ref.positions[r]!),
        );
      }
    });
  });

  it('llama3 leaves the short wavelengths alone and divides the long ones by the factor', () => {
    const ref = reference.llama3!;
    const plain = inverseFrequencies({ headDim: 128, ropeTheta: 500000, rope: { type: 'default' } });
    expect(ref.inv_freq[0]).toBeCloseTo(plain[0]!, 7);
    expect(ref.inv_freq[63]! / plain[63]!).toBeCloseTo(1 / 8, 5);
  });
});
