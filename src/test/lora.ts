// The LoRA fixtures of scripts/lora-fixtures.py (src/test/lora-fixtures/): tiny bases, PEFT adapters
// over them and PEFT's own merge_and_unload() of each, opened as models; and the bound within which
// a merge-studio agent's values equal PEFT's (each rounds the low-rank product in f32 its own way).
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { decodeFloats, type FloatDtype } from '../format/dtype.ts';
import { parseLoraConfig, planAdapter, type AdapterPlan } from '../format/adapter.ts';
import { openModel, type Model } from '../format/model.ts';
import { nodeModelFiles } from '../io/node.ts';
import type { ModelFile } from '../io/source.ts';
import { asRows, lowRankReference, type LowRankProduct } from '../methods/lora.ts';
import { openAdapterAgent } from '../driver/adapter-model.ts';

export const LORA_FIXTURES = fileURLToPath(new URL('./lora-fixtures/', import.meta.url));

/** Each adapter fixture and the base it adapts. */
export const LORA_ADAPTERS: Record<string, 'llama' | 'gpt2'> = {
  lora: 'llama',
  'rslora-patterns': 'llama',
  embedding: 'llama',
  'modules-to-save': 'llama',
  dora: 'llama',
  'gpt2-bias': 'gpt2',
  'gpt2-lora-bias': 'gpt2',
};

export function fixtureFiles(name: string): Promise<ModelFile[]> {
  return nodeModelFiles(join(LORA_FIXTURES, name));
}

export async function fixtureModel(name: string): Promise<Model> {
  return openModel(name, await fixtureFiles(name));
}

export async function fixtureAgent(name: string, base: Model, product: LowRankProduct): Promise<Model> {
  return openAdapterAgent(name, await fixtureFiles(name), base, { product: () => product });
}

/** A tensor's values, decoded exactly. */
export async function tensorValues(model: Model, name: string): Promise<Float64Array> {
  const t = model.tensors.get(name);
  if (!t) throw new Error(`${model.name} has no ${name}`);
  const n = t.shape.reduce((a, b) => a * b, 1);
  return decodeFloats(t.dtype as FloatDtype, await model.source(t.file).read(t.offset, t.end - t.begin), n);
}

/** The adapter's plan, as the agent reads it. */
export async function fixturePlan(name: string, base: Model): Promise<{ plan: AdapterPlan; adapter: Model }> {
  const files = await fixtureFiles(name);
  const config = files.find((f) => f.name === 'adapter_config.json');
  if (!config) throw new Error(`${name} has no adapter_config.json`);
  const settings = parseLoraConfig(
    new TextDecoder().decode(await config.source.read(0, config.source.size)),
    name,
  );
  const adapter = await openModel(
    name,
    files.filter((f) => f !== config),
  );
  return {
    plan: planAdapter(settings, [...adapter.tensors.values()], (n) => base.tensors.get(n)?.shape, name),
    adapter,
  };
}

const ulp = (x: number): number => 2 ** Math.max(Math.floor(Math.log2(Math.abs(x) || 2 ** -149)) - 23, -149);

/**
 * Per element of base tensor `name`, how far an agent's value may lie from PEFT's: the f32 rounding
 * of the rank-r product, (r + 2)·2⁻²⁴·|s|·Σ_k|B_ik·A_kj|, plus two ulps of the value for the addition
 * and the final rounding; with DoRA the product's bound scaled by the row's factor m / ‖W + τ‖, and
 * the norm's own f32 rounding, (cols + 4)·2⁻²⁴ of the value. 0 where the adapter leaves or replaces
 * the tensor. `weight`: the values the agent starts from (W).
 */
export async function peftBound(
  plan: AdapterPlan,
  adapter: Model,
  name: string,
  peft: Float64Array,
  weight: Float64Array,
): Promise<Float64Array> {
  const bound = new Float64Array(peft.length);
  if (plan.biases.has(name)) return bound.map((_, e) => 2 * ulp(peft[e] ?? 0));
  const module = plan.modules.get(name);
  if (!module) return bound;
  const factors = async (abs: boolean) => {
    const a = Float32Array.from(await tensorValues(adapter, module.a), (v) => (abs ? Math.abs(v) : v));
    const b = Float32Array.from(await tensorValues(adapter, module.b), (v) => (abs ? Math.abs(v) : v));
    const inDim = a.length / module.r;
    const outDim = b.length / module.r;
    const [left, right, rows, cols] = module.transposed
      ? [asRows(a, inDim, module.r, true), b, inDim, outDim]
      : [b, asRows(a, inDim, module.r, true), outDim, inDim];
    return { product: lowRankReference({ left, right, rows, cols, rank: module.r }), cols };
  };
  const { product: magnitudes, cols } = await factors(true);
  const m = module.magnitude === undefined ? undefined : await tensorValues(adapter, module.magnitude);
  const tau = m ? (await factors(false)).product : undefined;
  for (let e = 0; e < bound.length; e++) {
    let factor = 1;
    let norm = 0;
    if (m && tau) {
      const row = Math.floor(e / cols);
      let sum = 0;
      for (let j = 0; j < cols; j++) {
        const i = row * cols + j;
        sum += ((weight[i] ?? 0) + module.scale * (tau[i] ?? 0)) ** 2;
      }
      factor = Math.abs(m[row] ?? 0) / Math.sqrt(sum);
      norm = (cols + 4) * 2 ** -24 * Math.abs(peft[e] ?? 0);
    }
    bound[e] =
      (module.r + 2) * 2 ** -24 * Math.abs(module.scale) * (magnitudes[e] ?? 0) * factor +
      norm +
      2 * ulp(peft[e] ?? 0);
  }
  return bound;
}

/** Elements of `got` farther from `want` than `bound`, as "tensor[e]: got vs want (bound)". */
export function outside(
  name: string,
  got: ArrayLike<number>,
  want: ArrayLike<number>,
  bound: ArrayLike<number>,
): string[] {
  const bad: string[] = [];
  for (let e = 0; e < want.length; e++) {
    const diff = Math.abs((got[e] ?? NaN) - (want[e] ?? 0));
    if (!(diff <= (bound[e] ?? 0)) && bad.length < 3)
      bad.push(`${name}[${e}]: ${got[e]} vs ${want[e]} (${bound[e]})`);
  }
  return bad;
}
