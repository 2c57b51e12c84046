// A merge of LoRA agents written as one PEFT LoRA adapter (issue 35, item 3): where the method is a
// weighted sum of τ, τ_merged = Σ_t c_t s_t B_t A_t is itself a LoRA of the concatenated ranks,
// A = [A_1; …; A_T] and B = [c_1 s_1 B_1 | … | c_T s_T B_T], at scaling 1 (lora_alpha = r, per module
// through rank_pattern / alpha_pattern). Exact but for the f32 rounding of c_t·s_t·B_t. Every other
// method masks, rescales, elects signs or normalises τ element by element: not a low-rank product.
import type { Model } from '../format/model.ts';
import type { LoraModule } from '../format/adapter.ts';
import { decodeFloats, type FloatDtype } from '../format/dtype.ts';
import { ADAPTER_CONFIG } from '../format/peft.ts';
import { layoutSafetensors, SafetensorsStreamWriter, type TensorSpec } from '../format/write.ts';
import type { FolderSink } from '../io/sink.ts';
import { must } from '../io/checked.ts';
import { METHODS, type MethodParams } from '../methods/types.ts';
import { listed } from '../methods/params.ts';
import { adapterSource, type AdapterSource } from './adapter-model.ts';
import { MergeError, type WrittenFile } from './job.ts';
import { writeText } from './model-card.ts';

export const ADAPTER_WEIGHTS = 'adapter_model.safetensors';

/** Which methods an adapter output can express, for the refusal and the help. */
export const ADAPTER_METHODS_NOTE =
  'task_arithmetic and linear (normalised, or weights summing to 1) are weighted sums of τ, exact as one ' +
  `LoRA of the concatenated ranks; ${listed(
    METHODS.filter((m) => m !== 'task_arithmetic' && m !== 'linear'),
    'and',
  )} ` +
  'mask, rescale, elect signs or normalise τ element by element, which no low-rank product expresses.';

/** Each agent's coefficient c_t on its τ, or why the method has none. */
export function adapterCoefficients(params: MethodParams): number[] {
  const { method, weights, normalize, lambda } = params;
  const total = weights.reduce((a, b) => a + b, 0);
  if (method === 'task_arithmetic') {
    const divide = normalize && Math.abs(total) >= 1e-8;
    return weights.map((w) => (lambda * w) / (divide ? total : 1));
  }
  if (method === 'linear') {
    if (normalize && total !== 0) return weights.map((w) => w / total);
    if (total === 1) return [...weights];
    throw new MergeError(
      `linear without normalising is Σ w θ = (Σ w)·θ₀ + Σ w τ: a LoRA cannot scale the base (Σ w = ${total})`,
    );
  }
  throw new MergeError(`${method} cannot be written as a LoRA adapter: ${ADAPTER_METHODS_NOTE}`);
}

interface Part {
  source: AdapterSource;
  module: LoraModule;
  coefficient: number;
}

/** The output's modules in base order, each with the agents' parts, after checking every agent can be one. */
function outputModules(
  base: Model,
  agents: readonly Model[],
  coefficients: readonly number[],
): Map<string, Part[]> {
  const modules = new Map<string, Part[]>();
  let fanInFanOut: boolean | undefined;
  agents.forEach((agent, t) => {
    const source = adapterSource(agent);
    if (!source)
      throw new MergeError(
        `${agent.name} is not a LoRA adapter: an adapter output needs every agent to be one`,
      );
    const { plan, label } = source;
    const refuse = (what: string) => {
      throw new MergeError(`${label}: ${what}, which a LoRA of concatenated ranks cannot carry`);
    };
    if (plan.replaced.size > 0)
      refuse(
        `replaces ${[...plan.replaced.keys()].join(', ')} (modules_to_save, biases, a stored base layer)`,
      );
    if (plan.biases.size > 0) refuse('has lora_bias');
    for (const m of plan.modules.values()) if (m.magnitude !== undefined) refuse(`is DoRA (${m.module})`);
    if (fanInFanOut !== undefined && fanInFanOut !== plan.settings.fanInFanOut)
      refuse('differs from the other agents in fan_in_fan_out');
    fanInFanOut = plan.settings.fanInFanOut;
    for (const module of plan.modules.values()) {
      const parts = modules.get(module.target) ?? [];
      parts.push({ source, module, coefficient: must(coefficients[t], `coefficient ${t}`) });
      modules.set(module.target, parts);
    }
  });
  const order = [...base.tensors.keys()];
  return new Map([...modules].sort(([a], [b]) => order.indexOf(a) - order.indexOf(b)));
}

async function values(model: Model, name: string): Promise<Float32Array> {
  const t = must(model.tensors.get(name), name);
  const n = t.shape.reduce((a, b) => a * b, 1);
  return Float32Array.from(
    decodeFloats(t.dtype as FloatDtype, await model.source(t.file).read(t.offset, t.end - t.begin), n),
  );
}

const escape = (name: string): string => name.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

/**
 * Writes the merge of the LoRA `agents` by `params` into `out` as a PEFT adapter folder
 * (adapter_config.json, adapter_model.safetensors) that PEFT loads onto the base.
 */
export async function writeAdapterMerge(job: {
  base: Model;
  agents: readonly Model[];
  params: MethodParams;
  baseModel: string;
  out: FolderSink;
}): Promise<WrittenFile[]> {
  const coefficients = adapterCoefficients(job.params);
  const modules = outputModules(job.base, job.agents, coefficients);
  if (modules.size === 0) throw new MergeError('the agents adapt no tensor: there is no adapter to write');
  const specs: (TensorSpec & { make: () => Promise<Uint8Array> })[] = [];
  const ranks = new Map<string, number>();
  for (const [target, parts] of modules) {
    const first = must(parts[0], target).module;
    const rank = parts.reduce((sum, p) => sum + p.module.r, 0);
    ranks.set(first.module, rank);
    const a = must(parts[0]?.source.weights.tensors.get(first.a), first.a).shape;
    const b = must(parts[0]?.source.weights.tensors.get(first.b), first.b).shape;
    const [aName, bName] = first.embedding
      ? ['lora_embedding_A', 'lora_embedding_B']
      : ['lora_A.weight', 'lora_B.weight'];
    const prefix = `base_model.model.${first.module}`;
    const inDim = a[1] ?? 0;
    const outDim = b[0] ?? 0;
    specs.push({
      name: `${prefix}.${aName}`,
      dtype: 'F32',
      shape: [rank, inDim],
      // A rows stacked: agent t's r_t rows after the agents before it.
      make: async () => {
        const out = new Float32Array(rank * inDim);
        let row = 0;
        for (const p of parts) {
          out.set(await values(p.source.weights, p.module.a), row * inDim);
          row += p.module.r;
        }
        return new Uint8Array(out.buffer);
      },
    });
    specs.push({
      name: `${prefix}.${bName}`,
      dtype: 'F32',
      shape: [outDim, rank],
      // B columns side by side, each scaled by its agent's c_t·s_t.
      make: async () => {
        const out = new Float32Array(outDim * rank);
        let col = 0;
        for (const p of parts) {
          const bValues = await values(p.source.weights, p.module.b);
          const c = p.coefficient * p.module.scale;
          for (let i = 0; i < outDim; i++)
            for (let k = 0; k < p.module.r; k++)
              out[i * rank + col + k] = c * (bValues[i * p.module.r + k] ?? 0);
          col += p.module.r;
        }
        return new Uint8Array(out.buffer);
      },
    });
  }
  const written: WrittenFile[] = [];
  const r = must([...ranks.values()][0], 'rank');
  const others = [...ranks].filter(([, rank]) => rank !== r);
  const settings = must(adapterSource(must(job.agents[0], 'agent')), 'adapter').plan.settings;
  const config = {
    peft_type: 'LORA',
    base_model_name_or_path: job.baseModel,
    r,
    lora_alpha: r,
    rank_pattern: Object.fromEntries(others.map(([m, rank]) => [escape(m), rank])),
    alpha_pattern: Object.fromEntries(others.map(([m, rank]) => [escape(m), rank])),
    target_modules: [...ranks.keys()],
    fan_in_fan_out: settings.fanInFanOut,
    use_rslora: false,
    use_dora: false,
    bias: 'none',
    lora_dropout: 0,
    modules_to_save: null,
    init_lora_weights: true,
    inference_mode: true,
    task_type: null,
  };
  await writeText(job.out, ADAPTER_CONFIG, `${JSON.stringify(config, null, 2)}\n`, written);
  const layout = layoutSafetensors(specs, { format: 'pt' });
  const sink = await job.out.create(ADAPTER_WEIGHTS);
  const writer = new SafetensorsStreamWriter(sink, layout, ADAPTER_WEIGHTS);
  try {
    const byName = new Map(specs.map((s) => [s.name, s]));
    for (const t of layout.tensors)
      await writer.writeTensorBytes(t.name, await must(byName.get(t.name), t.name).make());
    await writer.close();
  } catch (error) {
    await writer.abort();
    throw error;
  }
  written.push({ file: ADAPTER_WEIGHTS, bytes: layout.fileSize });
  return written;
}
