// A synthetic base + agents set for benchmarks: a transformer-shaped bf16 model and agents that
// each change a sparse, tensor-dependent subset of elements (densities like the RAM paper's agents).
import { f32ToBf16, bf16ToF32 } from '../format/dtype.ts';
import { numel } from '../format/safetensors.ts';
import { layoutSafetensors, SafetensorsStreamWriter, type TensorSpec } from '../format/write.ts';
import type { FolderSink } from '../io/sink.ts';
import { floatStream as rng } from '../demo/rng.ts';

export interface SyntheticOptions {
  /** Bytes of one model (base or agent); the set is (agents + 1) times this. */
  modelBytes: number;
  agents: number;
  hidden: number;
  seed: number;
}

/** The paper's measured shares of changed elements (coding, tool, memory), cycled for more agents. */
export const AGENT_DENSITIES = [0.032, 0.462, 0.543];

export function syntheticSpecs(options: SyntheticOptions): TensorSpec[] {
  const h = options.hidden;
  const ff = Math.round((h * 11) / 4 / 64) * 64;
  const perLayer: [string, number[]][] = [
    ['self_attn.q_proj.weight', [h, h]],
    ['self_attn.k_proj.weight', [h, h]],
    ['self_attn.v_proj.weight', [h, h]],
    ['self_attn.o_proj.weight', [h, h]],
    ['mlp.gate_proj.weight', [ff, h]],
    ['mlp.up_proj.weight', [ff, h]],
    ['mlp.down_proj.weight', [h, ff]],
    ['input_layernorm.weight', [h]],
    ['post_attention_layernorm.weight', [h]],
  ];
  const layerBytes = perLayer.reduce((sum, [, shape]) => sum + numel(shape) * 2, 0);
  const layers = Math.max(1, Math.round(options.modelBytes / layerBytes));
  const specs: TensorSpec[] = [];
  for (let l = 0; l < layers; l++)
    for (const [name, shape] of perLayer)
      specs.push({ name: `model.layers.${l}.${name}`, dtype: 'BF16', shape });
  specs.push({ name: 'model.norm.weight', dtype: 'BF16', shape: [h] });
  return specs;
}

function baseValues(spec: TensorSpec, random: () => number): Uint16Array {
  const n = numel(spec.shape);
  const out = new Uint16Array(n);
  const norm = spec.shape.length === 1;
  const scale = norm ? 0 : 1 / Math.sqrt(spec.shape[1] ?? 1);
  for (let i = 0; i < n; i++)
    out[i] = f32ToBf16(norm ? 1 + (random() - 0.5) * 0.1 : (random() * 2 - 1) * scale);
  return out;
}

/** A small RL-sized update of one bf16 value: 1–8 bf16 steps either way, so it survives the bf16 save. */
export function rlUpdate(bits: number, random: () => number): number {
  const value = bf16ToF32(bits);
  const steps = (1 + Math.floor(random() * 8)) * (random() < 0.5 ? -1 : 1);
  const ulp = Math.max(Math.abs(value), 1e-30) * 2 ** -7;
  return f32ToBf16(value + steps * ulp);
}

function agentValues(base: Uint16Array, density: number, random: () => number): Uint16Array {
  const out = base.slice();
  for (let i = 0; i < out.length; i++) if (random() < density) out[i] = rlUpdate(out[i]!, random);
  return out;
}

async function writeModel(
  folder: FolderSink,
  specs: TensorSpec[],
  values: (spec: TensorSpec, index: number) => Uint16Array,
): Promise<void> {
  const layout = layoutSafetensors(specs, { format: 'pt' });
  const writer = new SafetensorsStreamWriter(
    await folder.create('model.safetensors'),
    layout,
    'model.safetensors',
  );
  const byName = new Map(specs.map((spec, index) => [spec.name, index]));
  for (const spec of layout.tensors) {
    const index = byName.get(spec.name)!;
    const data = values(specs[index]!, index);
    await writer.writeTensorBytes(spec.name, new Uint8Array(data.buffer, data.byteOffset, data.byteLength));
  }
  await writer.close();
}

/** Writes base/ and agent-<t>/ folders through `folderFor`; every value is reproducible from the seed. */
export async function writeSyntheticSet(
  options: SyntheticOptions,
  folderFor: (name: string) => FolderSink,
): Promise<string[]> {
  const specs = syntheticSpecs(options);
  const base = (spec: TensorSpec, index: number) => baseValues(spec, rng(options.seed * 7919 + index));
  await writeModel(folderFor('base'), specs, base);
  const names = ['base'];
  for (let t = 0; t < options.agents; t++) {
    const density = AGENT_DENSITIES[t % AGENT_DENSITIES.length]!;
    await writeModel(folderFor(`agent-${t}`), specs, (spec, index) => {
      const local = rng(options.seed * 104729 + t * 7 + index * 131);
      // Heterogeneous across tensors: some get far more of an agent's updates than others.
      const tensorDensity = Math.min(1, density * (0.25 + 1.5 * local()));
      return agentValues(base(spec, index), tensorDensity, local);
    });
    names.push(`agent-${t}`);
  }
  return names;
}
