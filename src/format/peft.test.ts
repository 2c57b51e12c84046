// PEFT adapters are recognised, with rank, alpha, targets and base model, from real adapter folders
// written by peft and trl (shared/checkpoints), and from tensor names alone; full checkpoints are not.
import { existsSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { must } from '../io/checked.ts';
import { nodeFileSource } from '../io/node.ts';
import { adapterMessage, ADAPTER_CONFIG, detectAdapter, isLoraTensor } from './peft.ts';
import { readSafetensorsHeader } from './safetensors.ts';

const here = dirname(fileURLToPath(import.meta.url));
const root = [
  process.env.MERGE_STUDIO_CHECKPOINTS,
  join(here, '../../shared/checkpoints'),
  join(here, '../../../shared/checkpoints'),
].find((dir): dir is string => dir !== undefined && existsSync(dir));

async function folder(path: string, weights: string) {
  const source = await nodeFileSource(join(must(root, 'checkpoints folder'), path, weights));
  try {
    const header = await readSafetensorsHeader(source);
    const config = {
      text: readFileSync(join(must(root, 'checkpoints folder'), path, ADAPTER_CONFIG), 'utf8'),
    };
    return { header, config };
  } finally {
    await source.close();
  }
}

describe.skipIf(root === undefined)('PEFT adapters from shared/checkpoints', () => {
  it('reads a peft LoRA r=8 adapter of roberta-base', async () => {
    const { header, config } = await folder(
      'peft-roberta-mrpc-adapters/lora-r8',
      'checkpoint-230.adapter_model.safetensors',
    );
    const adapter = detectAdapter(config, header.tensors);
    expect(adapter).toEqual({
      type: 'LORA',
      rank: 8,
      alpha: 16,
      targets: ['query', 'value'],
      baseModel: 'roberta-base',
      // 12 layers × (query, value) × (A, B)
      loraTensors: 48,
      evidence: ADAPTER_CONFIG,
    });
    const message = adapterMessage(must(adapter, 'adapter'), 'lora-r8');
    for (const part of [
      'lora-r8 is a PEFT LORA adapter',
      'rank 8',
      'alpha 16',
      'targets query, value',
      'Load roberta-base as the base',
    ])
      expect(message).toContain(part);
    // A LoRA adapter is an agent over its base, never the base itself.
    expect(adapterMessage(must(adapter, 'adapter'), 'lora-r8', 'base')).toContain(
      'so it cannot be the base. Load roberta-base as the base and the adapter as an agent',
    );
    expect(
      adapterMessage(must(adapter, 'adapter'), 'lora-r8', 'agent', 'two weights files are not one model'),
    ).toContain('adapter_model.safetensors, and two weights files are not one model.');
  });

  it('reads a trl LoRA adapter of gpt2, and its rank from lora_A alone without the config', async () => {
    const { header, config } = await folder('trl-kto-gpt2-lora', 'checkpoint-500.adapter_model.safetensors');
    expect(detectAdapter(config, header.tensors)).toMatchObject({
      type: 'LORA',
      rank: 16,
      alpha: 16,
      targets: ['c_attn'],
      baseModel: 'gpt2',
      loraTensors: 24,
    });
    const fromNames = detectAdapter(null, header.tensors, 'checkpoint-500.adapter_model.safetensors');
    expect(fromNames).toMatchObject({
      type: 'LORA',
      rank: 16,
      alpha: null,
      baseModel: null,
      evidence: 'checkpoint-500.adapter_model.safetensors',
    });
  });

  it('recognises a non-LoRA PEFT adapter (FineGates) by its config', async () => {
    const { header, config } = await folder(
      'peft-roberta-mrpc-adapters/finegates',
      'checkpoint-230.adapter_model.safetensors',
    );
    const adapter = detectAdapter(config, header.tensors);
    expect(adapter).toMatchObject({
      type: 'FINEGATES',
      rank: null,
      loraTensors: 0,
      baseModel: 'roberta-base',
    });
    expect(adapterMessage(must(adapter, 'adapter'), 'finegates')).toContain('PEFT FINEGATES adapter');
  });
});

describe('detectAdapter without files', () => {
  it('finds nothing in a full checkpoint', () => {
    const tensors = [
      { name: 'model.layers.0.self_attn.q_proj.weight', shape: [64, 64] },
      { name: 'lm_head.weight', shape: [128, 64] },
    ];
    expect(detectAdapter(null, tensors)).toBeNull();
    expect(detectAdapter(null, [])).toBeNull();
  });

  it('tells LoRA factor names from look-alikes', () => {
    expect(isLoraTensor('base_model.model.h.0.attn.c_attn.lora_A.weight')).toBe(true);
    expect(isLoraTensor('x.lora_embedding_B')).toBe(true);
    expect(isLoraTensor('model.explora_A.weight')).toBe(false);
    expect(isLoraTensor('model.lora_Adapter.weight')).toBe(false);
  });

  it('keeps an adapter folder whose config is not JSON an adapter', () => {
    expect(detectAdapter({ text: '{ broken' }, [])).toMatchObject({
      type: 'PEFT',
      rank: null,
      evidence: ADAPTER_CONFIG,
    });
  });
});
