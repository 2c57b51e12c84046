// A Llama/Qwen2-shaped base + agents set at any layer count, sharded as Hugging Face writes it, for
// trying the studio and the CLI at LLM scale: embeddings, L decoder layers (q/k/v with biases as
// Qwen2 has them), final norm and head, and agents whose changes are structured the way RL updates
// are (denser in some layers, concentrated on some output rows), so views have something to show.
import { f32ToBf16 } from '../format/dtype.ts';
import { numel } from '../format/safetensors.ts';
import { indexJson, planShards } from '../format/sharded.ts';
import { layoutSafetensors, SafetensorsStreamWriter, type TensorSpec } from '../format/write.ts';
import type { FolderSink } from '../io/sink.ts';
import { floatStream as rng } from '../demo/rng.ts';
import { AGENT_DENSITIES, rlUpdate } from './synthetic.ts';

export interface LlamaSetOptions {
  layers: number;
  hidden: number;
  /** Default: 11/2 of hidden, rounded to 64 (Qwen2's ratio). */
  intermediate?: number;
  vocab: number;
  /** Attention heads (default hidden / 64, at least 1) and key/value heads (default 1/7 of heads, at least 1). */
  heads?: number;
  kvHeads?: number;
  agents: number;
  seed: number;
  /** Tensor bytes per shard (default 2 GB, under the browser's download limit). */
  shardBytes?: number;
}

export interface LlamaShape {
  intermediate: number;
  heads: number;
  kvHeads: number;
  headDim: number;
}

export function llamaShape(o: LlamaSetOptions): LlamaShape {
  const heads = o.heads ?? Math.max(1, Math.floor(o.hidden / 64));
  const kvHeads = o.kvHeads ?? Math.max(1, Math.floor(heads / 7));
  const intermediate = o.intermediate ?? Math.max(64, Math.round((o.hidden * 11) / 2 / 64) * 64);
  return { intermediate, heads, kvHeads, headDim: Math.max(1, Math.floor(o.hidden / heads)) };
}

/** Tensor names and shapes as a Qwen2 / Llama checkpoint names them (bf16). */
export function llamaSpecs(o: LlamaSetOptions): TensorSpec[] {
  const { intermediate, kvHeads, headDim } = llamaShape(o);
  const h = o.hidden;
  const kv = kvHeads * headDim;
  const specs: TensorSpec[] = [{ name: 'model.embed_tokens.weight', dtype: 'BF16', shape: [o.vocab, h] }];
  for (let l = 0; l < o.layers; l++) {
    const p = `model.layers.${l}`;
    const add = (name: string, shape: number[]): void => {
      specs.push({ name: `${p}.${name}`, dtype: 'BF16', shape });
    };
    add('input_layernorm.weight', [h]);
    add('self_attn.q_proj.weight', [h, h]);
    add('self_attn.q_proj.bias', [h]);
    add('self_attn.k_proj.weight', [kv, h]);
    add('self_attn.k_proj.bias', [kv]);
    add('self_attn.v_proj.weight', [kv, h]);
    add('self_attn.v_proj.bias', [kv]);
    add('self_attn.o_proj.weight', [h, h]);
    add('post_attention_layernorm.weight', [h]);
    add('mlp.gate_proj.weight', [intermediate, h]);
    add('mlp.up_proj.weight', [intermediate, h]);
    add('mlp.down_proj.weight', [h, intermediate]);
  }
  specs.push({ name: 'model.norm.weight', dtype: 'BF16', shape: [h] });
  specs.push({ name: 'lm_head.weight', dtype: 'BF16', shape: [o.vocab, h] });
  return specs;
}

export function llamaConfig(o: LlamaSetOptions): Record<string, unknown> {
  const { intermediate, heads, kvHeads } = llamaShape(o);
  return {
    architectures: ['Qwen2ForCausalLM'],
    model_type: 'qwen2',
    hidden_size: o.hidden,
    intermediate_size: intermediate,
    num_hidden_layers: o.layers,
    num_attention_heads: heads,
    num_key_value_heads: kvHeads,
    vocab_size: o.vocab,
    tie_word_embeddings: false,
    torch_dtype: 'bfloat16',
  };
}

function layerOf(name: string): number | null {
  const match = /\.layers\.(\d+)\./.exec(name);
  return match ? Number(match[1]) : null;
}

function baseValues(spec: TensorSpec, random: () => number): Uint16Array {
  const n = numel(spec.shape);
  const out = new Uint16Array(n);
  const isNorm = spec.name.includes('norm');
  const scale = spec.shape.length === 1 ? 0.02 : 1 / Math.sqrt(spec.shape[1] ?? 1);
  for (let i = 0; i < n; i++)
    out[i] = f32ToBf16(isNorm ? 1 + (random() - 0.5) * 0.1 : (random() * 2 - 1) * scale);
  return out;
}

/**
 * Agent t changes a tensor with a density that depends on the layer (agent t peaks at its own depth)
 * and, within a matrix, on the output row: a seeded tenth of the rows take most of the updates.
 */
function agentValues(
  spec: TensorSpec,
  base: Uint16Array,
  t: number,
  layers: number,
  random: () => number,
): Uint16Array {
  const out = base.slice();
  const density = AGENT_DENSITIES[t % AGENT_DENSITIES.length]!;
  const layer = layerOf(spec.name);
  const peak = ((t + 1) / 4) * layers;
  const depth = layer === null ? 0.3 : Math.exp(-(((layer - peak) / Math.max(1, layers / 4)) ** 2));
  const rows = spec.shape.length === 2 ? spec.shape[0]! : 1;
  const cols = spec.shape.length === 2 ? spec.shape[1]! : out.length;
  const focused = new Uint8Array(rows);
  for (let r = 0; r < rows; r++) focused[r] = random() < 0.1 ? 1 : 0;
  for (let r = 0; r < rows; r++) {
    const p = Math.min(1, density * (0.2 + 1.6 * depth) * (focused[r] ? 4 : 0.6));
    for (let c = 0; c < cols; c++) {
      if (random() >= p) continue;
      const i = r * cols + c;
      out[i] = rlUpdate(out[i]!, random);
    }
  }
  return out;
}

async function writeShardedModel(
  folder: FolderSink,
  specs: TensorSpec[],
  shardBytes: number,
  config: Record<string, unknown>,
  values: (spec: TensorSpec, index: number) => Uint16Array,
): Promise<void> {
  const plan = planShards(specs, shardBytes);
  const byName = new Map(specs.map((spec, index) => [spec.name, index]));
  for (const shard of plan.shards) {
    const layout = layoutSafetensors(shard.tensors, { format: 'pt' });
    const writer = new SafetensorsStreamWriter(await folder.create(shard.file), layout, shard.file);
    for (const tensor of layout.tensors) {
      const index = byName.get(tensor.name)!;
      const data = values(specs[index]!, index);
      await writer.writeTensorBytes(
        tensor.name,
        new Uint8Array(data.buffer, data.byteOffset, data.byteLength),
      );
    }
    await writer.close();
  }
  const text = new TextEncoder();
  const write = async (name: string, content: string): Promise<void> => {
    const sink = await folder.create(name);
    await sink.write(text.encode(content));
    await sink.close();
  };
  if (plan.shards.length > 1) await write('model.safetensors.index.json', indexJson(plan));
  await write('config.json', `${JSON.stringify(config, null, 2)}\n`);
}

/** Writes base/ and agent-<t>/ through `folderFor`; every value is reproducible from the seed. */
export async function writeLlamaSet(
  o: LlamaSetOptions,
  folderFor: (name: string) => FolderSink,
): Promise<string[]> {
  const specs = llamaSpecs(o);
  const config = llamaConfig(o);
  const shardBytes = o.shardBytes ?? 2_000_000_000;
  const base = (spec: TensorSpec, index: number): Uint16Array => baseValues(spec, rng(o.seed * 7919 + index));
  await writeShardedModel(folderFor('base'), specs, shardBytes, config, base);
  const names = ['base'];
  for (let t = 0; t < o.agents; t++) {
    await writeShardedModel(folderFor(`agent-${t}`), specs, shardBytes, config, (spec, index) =>
      agentValues(spec, base(spec, index), t, o.layers, rng(o.seed * 104729 + t * 7 + index * 131)),
    );
    names.push(`agent-${t}`);
  }
  return names;
}
