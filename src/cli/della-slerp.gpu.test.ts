// `merge --method della | della_linear | slerp` through the command line, on WebGPU and with --cpu,
// on a small generated bf16 set whose 2-D tensors span several GPU windows: the CPU engine's output
// equals the f64 reference rounded once to bf16, byte for byte, and the GPU's is within the f32
// tolerance of it (SPEC.md: the GPU computes in f32).
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadModel } from './args.ts';
import { decodeFloats, encodeFloats, type FloatDtype } from '../format/dtype.ts';
import { numel } from '../format/safetensors.ts';
import { ulpOf } from '../methods/float32.ts';
import { defaultParams } from '../methods/defaults.ts';
import { referenceMerge } from '../methods/reference.ts';
import { accumulateSlerpSums, emptySlerpSums, slerpCoefficients } from '../methods/slerp.ts';
import type { MethodParams } from '../methods/types.ts';
import { at, must } from '../io/checked.ts';
import { runCli } from '../test/cli.ts';
import { floatTensor, rng, writeModelFolder } from '../test/fixtures.ts';

let dir: string;
const SHAPES: [string, number[]][] = [
  ['model.layers.0.mlp.up_proj.weight', [48, 97]],
  ['model.layers.0.input_layernorm.weight', [97]],
  ['model.layers.1.self_attn.q_proj.weight', [64, 64]],
];

/** name → [base, agent-0, agent-1] values as stored (bf16). */
const inputs = new Map<string, Float64Array[]>();

async function outputOf(path: string): Promise<Map<string, Uint8Array>> {
  const model = await loadModel(path);
  const out = new Map<string, Uint8Array>();
  for (const [name, t] of model.tensors)
    out.set(name, await model.source(t.file).read(t.offset, t.end - t.begin));
  return out;
}

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'merge-studio-della-slerp-'));
  const random = rng(7);
  const models: Float64Array[][] = [[], [], []];
  for (const [name, shape] of SHAPES) {
    const n = numel(shape);
    const base = Float64Array.from({ length: n }, () => random() - 0.5);
    // Agent 0 near the base (SLERP falls back to lerp), agent 1 far from it (a real slerp).
    const near = base.map((v) => (random() < 0.4 ? v + (random() - 0.5) * 0.01 : v));
    const far = base.map((v) => v * 0.3 + (random() - 0.5));
    const stored = [base, near, far].map((v) => decodeFloats('BF16', encodeFloats('BF16', v), n));
    inputs.set(name, stored);
    stored.forEach((v, m) => at(models, m).push(v));
  }
  for (const [m, folder] of ['base', 'agent-0', 'agent-1'].entries())
    await writeModelFolder(
      join(dir, folder),
      SHAPES.map(([name, shape], k) => floatTensor(name, 'BF16', shape, Array.from(at(at(models, m), k)))),
    );
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

const RUNS: { method: 'della' | 'della_linear' | 'slerp'; agents: string[]; flags: string[] }[] = [
  {
    method: 'della',
    agents: ['agent-0', 'agent-1'],
    flags: ['--density', '0.4', '--density', '0.6', '--della-epsilon', '0.2', '--seed', '3'],
  },
  {
    method: 'della_linear',
    agents: ['agent-0', 'agent-1'],
    flags: [
      '--density',
      '0.5',
      '--della-epsilon',
      '0.3',
      '--rescale',
      'l1',
      '--weight',
      '0.7',
      '--weight',
      '0.4',
    ],
  },
  { method: 'slerp', agents: ['agent-0'], flags: ['--t', '0.3'] },
  { method: 'slerp', agents: ['agent-1'], flags: ['--t', '0.7'] },
];

function paramsOf(run: (typeof RUNS)[number]): MethodParams {
  const n = run.agents.length;
  const params = defaultParams(run.method, n);
  if (run.method === 'della') return { ...params, density: [0.4, 0.6], dellaEpsilon: [0.2, 0.2], seed: 3 };
  if (run.method === 'della_linear')
    return { ...params, density: [0.5, 0.5], dellaEpsilon: [0.3, 0.3], rescale: 'l1', weights: [0.7, 0.4] };
  return { ...params, t: Number(run.flags[1]) };
}

describe('merge --method della | della_linear | slerp', () => {
  it.each(RUNS)(
    '$method of $agents ($flags), GPU and --cpu, as the reference',
    async (run) => {
      const label = `${run.method}-${run.agents.join('-')}`;
      const common = [
        'merge',
        '--base',
        join(dir, 'base'),
        ...run.agents.flatMap((a) => ['--model', join(dir, a)]),
        '--method',
        run.method,
        ...run.flags,
      ];
      const gpu = await runCli([...common, '--window-elements', '1000', '--out', join(dir, `gpu-${label}`)]);
      expect(gpu.code, gpu.stderr).toBe(0);
      expect(gpu.stderr).toMatch(/Engine: .*(swiftshader|vulkan)/i);
      const cpu = await runCli([
        ...common,
        '--cpu',
        '--window-elements',
        '1000',
        '--out',
        join(dir, `cpu-${label}`),
      ]);
      expect(cpu.code, cpu.stderr).toBe(0);
      const gpuOut = await outputOf(join(dir, `gpu-${label}`));
      const cpuOut = await outputOf(join(dir, `cpu-${label}`));
      const params = paramsOf(run);
      const indices = run.agents.map((a) => Number(a.slice(-1)) + 1);
      const out: FloatDtype = 'BF16';
      for (const [name, shape] of SHAPES) {
        const stored = must(inputs.get(name), name);
        const values = {
          name,
          dtype: out,
          base: at(stored, 0),
          agents: indices.map((i) => at(stored, i)),
          shape,
        };
        const want = referenceMerge(values, params, []);
        if (run.method === 'slerp') {
          // The near agent takes the lerp fallback, the far one the spherical path.
          const sums = emptySlerpSums();
          accumulateSlerpSums(sums, values.base, at(values.agents, 0));
          expect(slerpCoefficients(sums, must(params.t, 't')).lerp, `${label} ${name}`).toBe(
            run.agents[0] === 'agent-0',
          );
        }
        expect(cpuOut.get(name), `${label} ${name} (cpu)`).toEqual(encodeFloats(out, want));
        const got = decodeFloats(out, must(gpuOut.get(name), name), want.length);
        let far = 0;
        want.forEach((w, i) => {
          let magnitude = Math.abs(w);
          for (const v of [values.base, ...values.agents])
            magnitude = Math.max(magnitude, Math.abs(at(v, i)));
          // DELLA's 1/p reaches 1/(density − ε) = 5.
          if (
            !(
              Math.abs(at(got, i) - w) <=
              ulpOf(Math.fround(w), out) + 8 * ulpOf(Math.fround(20 * magnitude), 'F32')
            )
          )
            far++;
        });
        expect(far, `${label} ${name} (gpu)`).toBe(0);
      }
    },
    120_000,
  );

  it('refuses slerp of two agents and DELLA whose density ± ε leaves (0, 1), with the reason', async () => {
    const base = ['merge', '--base', join(dir, 'base'), '--cpu'];
    const two = await runCli([
      ...base,
      '--model',
      join(dir, 'agent-0'),
      '--model',
      join(dir, 'agent-1'),
      '--method',
      'slerp',
      '--out',
      join(dir, 'bad-slerp'),
    ]);
    expect(two.code).not.toBe(0);
    expect(two.stderr).toMatch(/exactly one agent/);
    const della = await runCli([
      ...base,
      '--model',
      join(dir, 'agent-0'),
      '--method',
      'della',
      '--density',
      '0.9',
      '--della-epsilon',
      '0.15',
      '--out',
      join(dir, 'bad-della'),
    ]);
    expect(della.code).not.toBe(0);
    expect(della.stderr).toMatch(/density ± dellaEpsilon must lie inside \(0, 1\)/);
  });
});
