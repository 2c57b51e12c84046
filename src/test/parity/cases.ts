// The parity suite's cases: the recipes in this folder run through `merge-studio merge --config` on a
// generated Llama-shaped bf16 set, and every merged tensor is compared byte for byte with what mergekit
// computes for the same recipe (mergekit-reference.ts: its semantics in torch's f32 arithmetic). Known
// exceptions are counted per element, never hidden: TIES entries tied at the k-th magnitude (mergekit's
// unstable argsort keeps an arbitrary subset), and, for the f64 CPU engine, results within f32 rounding
// of a bf16 rounding midpoint (mergekit rounds to f32 first, then to bf16).
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, expect } from 'vitest';
import { writeLlamaSet } from '../../bench/llama-set.ts';
import { loadModel } from '../../cli/args.ts';
import { decodeFloats, type FloatDtype } from '../../format/dtype.ts';
import { numel } from '../../format/safetensors.ts';
import { nodeFolder } from '../../io/node.ts';
import { runCli } from '../cli.ts';
import {
  magnitudeKeep,
  mergekitGta,
  outliersKeep,
  outlierTies,
  mergekitLinear,
  mergekitRam,
  mergekitSlerp,
  roundBf16,
  roundF32,
  tieDependent,
  type MergekitTensor,
  type Round,
} from './mergekit-reference.ts';
import { dareHash, dareKeepBelow, dareKept, fnv1a32 } from '../../methods/rng.ts';

const AGENTS = 3;

/** The generated inputs: name → [base, agent-0, agent-1, agent-2] values, and the folder they are in. */
export interface ParitySet {
  dir: string;
  inputs: Map<string, Float64Array[]>;
}

interface Tensor {
  dtype: FloatDtype;
  raw: Uint8Array;
  values: Float64Array;
}

async function readAll(path: string): Promise<Map<string, Tensor>> {
  const model = await loadModel(path);
  const out = new Map<string, Tensor>();
  for (const [name, t] of model.tensors) {
    const raw = await model.source(t.file).read(t.offset, t.end - t.begin);
    const count = numel(t.shape);
    const dtype = t.dtype as FloatDtype;
    out.set(name, { dtype, raw, values: decodeFloats(dtype, raw, count) });
  }
  return out;
}

export async function makeParitySet(): Promise<ParitySet> {
  const dir = await mkdtemp(join(tmpdir(), 'merge-studio-parity-'));
  await writeLlamaSet(
    { layers: 3, hidden: 64, intermediate: 128, vocab: 96, agents: AGENTS, seed: 11, shardBytes: 150_000 },
    (name) => nodeFolder(join(dir, name)),
  );
  const models = await Promise.all(
    ['base', 'agent-0', 'agent-1', 'agent-2'].map((m) => readAll(join(dir, m))),
  );
  const inputs = new Map(
    [...models[0]!.keys()].map((name) => [name, models.map((m) => m.get(name)!.values)]),
  );
  return { dir, inputs };
}

export async function removeParitySet(set: ParitySet | undefined): Promise<void> {
  if (set) await rm(set.dir, { recursive: true, force: true });
}

/** bf16 bits of a value already rounded to bf16. */
function bf16Bits(value: number): number {
  const f = new Float32Array([value]);
  return new Uint32Array(f.buffer)[0]! >>> 16;
}

export interface Case {
  recipe: string;
  method: string;
  /** mergekit's result for one tensor in the math dtype's rounding, before the bf16 output cast. */
  expected: (name: string, v: MergekitTensor, round: Round) => number[];
  /** Elements where a different tie order at the TIES threshold may change mergekit's result. */
  tieDependent?: (name: string, v: MergekitTensor) => Uint8Array;
  /**
   * Breadcrumbs: tensors where int(gamma·n) = 0, which mergekit's empty slice leaves as the base and
   * merge-studio merges with no outlier dropped (src/methods/band.ts).
   */
  emptySlice?: (name: string, v: MergekitTensor) => boolean;
}

export const W = [1.0, 0.6, 0.3];

/** Elements where any agent's entry is tied at its TIES threshold (see tieDependent). */
function tiesAt(v: MergekitTensor, density: number[]): Uint8Array {
  const out = new Uint8Array(v.base.length);
  v.agents.forEach((a, m) => {
    const dep = tieDependent(
      Array.from(a, (x, i) => roundF32(x - v.base[i]!)),
      density[m]!,
    );
    dep.forEach((d, i) => (out[i] ||= d));
  });
  return out;
}

/**
 * ties-gradients.yml resolved by hand as mergekit's evaluate_setting does for 3 layers: t = 0, 0.5, 1
 * for layers 0..2; the embeddings, the final norm and the head at 0 (mergekit's plan_module reads the
 * weights after the layers with its t = 0 config reader, as those before).
 */
function gradientParams(name: string): { density: number[]; weights: number[] } {
  const layer = /layers\.(\d+)\./.exec(name);
  const t = layer ? Number(layer[1]) / 2 : 0;
  const at = (values: Record<number, number>): number => values[t]!;
  return {
    density: [at({ 0: 1, 0.5: 0.7, 1: 0.1 }), 0.5, 0.33],
    weights: [1, at({ 0: 0, 0.5: 0.5, 1: 1 }), name.includes('mlp') ? 0.5 : 0],
  };
}
/** mergekit's gradient position of a tensor in the 3-layer set (as gradientParams resolves it). */
function layerT(name: string): number {
  const layer = /layers\.(\d+)\./.exec(name);
  return layer ? Number(layer[1]) / 2 : 0;
}

const gtaTies = (density: number) => (name: string, v: MergekitTensor, round: Round) =>
  mergekitGta(v, round, {
    weights: W,
    keep: v.agents.map((a) =>
      magnitudeKeep(
        Array.from(a, (x, i) => round(x - v.base[i]!)),
        density,
      ),
    ),
    consensus: true,
    normalize: true,
  });

/** breadcrumbs.yml / breadcrumbs_ties.yml: per-model density and gamma. */
const CRUMB_DENSITY = [0.8, 0.5, 0.6];
const CRUMB_GAMMA = [0.02, 0.01, 0.1];
const crumbs = (consensus: boolean) => (_: string, v: MergekitTensor, round: Round) =>
  mergekitGta(v, round, {
    weights: W,
    keep: v.agents.map((a, t) =>
      outliersKeep(
        Array.from(a, (x, i) => round(x - v.base[i]!)),
        CRUMB_DENSITY[t]!,
        CRUMB_GAMMA[t]!,
      ),
    ),
    consensus,
    normalize: false,
  });
const crumbTies = (_: string, v: MergekitTensor): Uint8Array => {
  const out = new Uint8Array(v.base.length);
  v.agents.forEach((a, t) =>
    outlierTies(
      Array.from(a, (x, i) => roundF32(x - v.base[i]!)),
      CRUMB_DENSITY[t]!,
      CRUMB_GAMMA[t]!,
    ).forEach((d, i) => (out[i] ||= d)),
  );
  return out;
};
const crumbEmpty = (_: string, v: MergekitTensor): boolean =>
  CRUMB_GAMMA.some((g) => Math.trunc(g * v.base.length) === 0);

export const CASES: Case[] = [
  { recipe: 'ram.yml', method: 'ram', expected: (_, v, r) => mergekitRam(v, r, { epsilon: 1e-5 }) },
  {
    recipe: 'ramplus_tl.yml',
    method: 'ramplus_tl',
    expected: (_, v, r) => mergekitRam(v, r, { epsilon: 1e-5, tl: { r: 0.1, alpha: 0.2 } }),
  },
  {
    recipe: 'ramplus_tl-r05.yml',
    method: 'ramplus_tl (r 0.5, α 1, ε 1e-4)',
    expected: (_, v, r) => mergekitRam(v, r, { epsilon: 1e-4, tl: { r: 0.5, alpha: 1 } }),
  },
  {
    recipe: 'task_arithmetic.yml',
    method: 'task_arithmetic',
    expected: (_, v, r) =>
      mergekitGta(v, r, { weights: [0.5, 0.3, 0.7], consensus: false, normalize: false }),
  },
  {
    recipe: 'linear.yml',
    method: 'linear (no base_model)',
    expected: (_, v, r) => mergekitLinear(v.agents, [1, 0.3, 0.5], true, r),
  },
  { recipe: 'ties-defaults.yml', method: 'ties (no density: 1.0)', expected: gtaTies(1) },
  {
    recipe: 'ties-density.yml',
    method: 'ties (density 0.5)',
    expected: gtaTies(0.5),
    tieDependent: (_, v) => tiesAt(v, [0.5, 0.5, 0.5]),
  },
  {
    recipe: 'ties-gradients.yml',
    method: 'ties (gradients and filters)',
    expected: (name, v, r) => {
      const { density, weights } = gradientParams(name);
      return mergekitGta(v, r, {
        weights,
        keep: v.agents.map((a, m) =>
          magnitudeKeep(
            Array.from(a, (x, i) => r(x - v.base[i]!)),
            density[m]!,
          ),
        ),
        consensus: true,
        normalize: true,
      });
    },
    tieDependent: (name, v) => tiesAt(v, gradientParams(name).density),
  },
  {
    recipe: 'dare_linear.yml',
    method: 'dare_linear (no density: 1.0)',
    expected: (_, v, r) =>
      mergekitGta(v, r, { weights: [0.5, 0.5, 0.5], consensus: false, normalize: false }),
  },
  {
    recipe: 'dare_ties-defaults.yml',
    method: 'dare_ties (no density, no normalize)',
    expected: (_, v, r) => mergekitGta(v, r, { weights: W, consensus: true, normalize: false }),
  },
  {
    recipe: 'dare_ties-l1.yml',
    method: 'dare_ties (density 0.6, rescale: L1 on the same mask)',
    expected: (name, v, r) =>
      mergekitGta(v, r, {
        weights: W,
        // The mask is merge-studio's seeded draw (mergekit's torch.bernoulli cannot be reproduced);
        // what is compared is mergekit's L1 rescale and merge applied to it.
        keep: v.agents.map((_, t) =>
          Uint8Array.from(v.base, (__, i) =>
            dareKept(dareHash(5, fnv1a32(name), t, i), dareKeepBelow(0.6)) ? 1 : 0,
          ),
        ),
        l1: true,
        consensus: true,
        normalize: false,
      }),
  },
  {
    recipe: 'slerp.yml',
    method: 'slerp (t 0.3)',
    expected: (_, v, r) => mergekitSlerp(v.base, v.agents[1]!, 0.3, r),
  },
  {
    recipe: 'slerp-gradient.yml',
    method: 'slerp (t gradient 0.1 → 0.9)',
    expected: (name, v, r) => mergekitSlerp(v.base, v.agents[1]!, 0.1 + 0.8 * layerT(name), r),
  },
  {
    recipe: 'breadcrumbs.yml',
    method: 'breadcrumbs (density, gamma per model)',
    expected: crumbs(false),
    tieDependent: crumbTies,
    emptySlice: crumbEmpty,
  },
  {
    recipe: 'breadcrumbs_ties.yml',
    method: 'breadcrumbs_ties (density, gamma per model)',
    expected: crumbs(true),
    tieDependent: crumbTies,
    emptySlice: crumbEmpty,
  },
];

export interface Outcome {
  elements: number;
  differing: number;
  tieDependent: number;
  /** Elements whose exact (f64) value lies within f32 rounding of a bf16 rounding midpoint. */
  nearMidpoint: number;
  /** Elements of tensors that mergekit's empty breadcrumbs slice leaves as the base (emptySlice). */
  emptySlice: number;
  /** Differing elements that no exception explains: must be 0. */
  unexplained: number;
  /** Elements that differ from mergekit computing in bfloat16 (recipe `dtype: bfloat16`). */
  bf16MathDiffering: number;
}

/** Whether x is so close to a midpoint between two bf16 values that f32 rounding can decide its side. */
function nearBf16Midpoint(x: number): boolean {
  if (x === 0 || !Number.isFinite(x)) return false;
  const lower = roundBf16(x) <= x ? roundBf16(x) : nextBf16Down(roundBf16(x));
  const upper = nextBf16Up(lower);
  const midpoint = (lower + upper) / 2;
  return Math.abs(x - midpoint) <= Math.abs(x) * 2 ** -22;
}

function bf16FromBits(bits: number): number {
  return new Float32Array(new Uint32Array([(bits & 0xffff) << 16]).buffer)[0]!;
}
function nextBf16Up(v: number): number {
  const b = bf16Bits(v);
  return bf16FromBits(v >= 0 ? b + 1 : b - 1);
}
function nextBf16Down(v: number): number {
  const b = bf16Bits(v);
  if (v === 0) return -bf16FromBits(1);
  return bf16FromBits(v > 0 ? b - 1 : b + 1);
}

/** Runs one recipe through the CLI (`--cpu` or WebGPU) and compares every element with mergekit's. */
export async function runCase(set: ParitySet, c: Case, cpu: boolean): Promise<Outcome> {
  const { dir, inputs } = set;
  const text = (await readFile(join(import.meta.dirname, c.recipe), 'utf8')).replaceAll('SET/', `${dir}/`);
  const recipe = join(dir, c.recipe);
  await writeFile(recipe, text);
  const out = join(dir, `out-${cpu ? 'cpu' : 'gpu'}-${c.recipe}`);
  const result = await runCli(['merge', '--config', recipe, ...(cpu ? ['--cpu'] : []), '--out', out], {
    timeoutMs: 240_000,
  });
  expect(result.code, result.stderr).toBe(0);
  const merged = await readAll(out);
  const outcome: Outcome = {
    elements: 0,
    differing: 0,
    tieDependent: 0,
    nearMidpoint: 0,
    emptySlice: 0,
    unexplained: 0,
    bf16MathDiffering: 0,
  };
  for (const [name] of inputs) {
    const got = merged.get(name);
    expect(got?.dtype, name).toBe('BF16');
    const bits = new Uint16Array(
      got!.raw.buffer.slice(got!.raw.byteOffset, got!.raw.byteOffset + got!.raw.byteLength),
    );
    const [base, ...agents] = inputs.get(name)!;
    const v = { base: base!, agents };
    const want = c.expected(name, v, roundF32);
    const exact = c.expected(name, v, (x) => x);
    const inBf16Math = c.expected(name, v, roundBf16);
    const ties = c.tieDependent?.(name, v);
    const empty = c.emptySlice?.(name, v) ?? false;
    want.forEach((value, i) => {
      outcome.elements++;
      if (empty) outcome.emptySlice++;
      const midpoint = nearBf16Midpoint(exact[i]!);
      if (ties?.[i]) outcome.tieDependent++;
      if (midpoint) outcome.nearMidpoint++;
      if (bf16Bits(roundBf16(inBf16Math[i]!)) !== bits[i]) outcome.bf16MathDiffering++;
      if (bf16Bits(roundBf16(value)) === bits[i]) return;
      outcome.differing++;
      if (!ties?.[i] && !midpoint && !empty) outcome.unexplained++;
    });
  }
  return outcome;
}

/** The README's table rows: method, byte-identical?, share differing, and against bf16 math. */
export function parityTable(outcomes: Map<string, Outcome>): string {
  const share = (n: number, of: number): string => `${((100 * n) / of).toFixed(3)}%`;
  const rows = [...outcomes].map(
    ([method, o]) =>
      `| ${method} | ${o.differing === 0 ? 'yes' : 'no'} | ${o.differing} of ${o.elements} (${share(o.differing, o.elements)}) | ` +
      `${o.tieDependent} | ${o.nearMidpoint} | ${o.bf16MathDiffering} (${share(o.bf16MathDiffering, o.elements)}) |`,
  );
  return [
    '| method (recipe) | byte-identical | elements differing | TIES tie-dependent | near a bf16 midpoint | differing from bf16 math |',
    '|---|---|---|---|---|---|',
    ...rows,
    '',
    ...[...outcomes]
      .filter(([, o]) => o.emptySlice > 0)
      .map(([method, o]) => `${method}: ${o.emptySlice} elements in tensors where int(gamma·n) = 0`),
  ].join('\n');
}

/**
 * The generated set for one suite, made before its tests and removed after them; the outcomes the
 * tests record print as the README's table with PARITY_TABLE=1.
 */
export function paritySuite(engine: string): { set(): ParitySet; outcomes: Map<string, Outcome> } {
  let set: ParitySet | undefined;
  const outcomes = new Map<string, Outcome>();
  beforeAll(async () => {
    set = await makeParitySet();
  }, 60_000);
  afterAll(async () => {
    if (process.env.PARITY_TABLE) process.stdout.write(`\n${engine} engine\n${parityTable(outcomes)}`);
    await removeParitySet(set);
  });
  return {
    set: () => {
      if (!set) throw new Error('the parity set was not made');
      return set;
    },
    outcomes,
  };
}
