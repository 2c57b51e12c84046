// The studio's worker keeps its engine between jobs (warm-pool.ts): statistics, then merges of one
// set with several methods, then another set of another dtype and size, all on one engine. Each job's
// result must equal that of a fresh engine (and the CPU engine's), whatever the jobs before left in
// the buffers: outputs are poisoned before every window, so a word left over from an earlier job
// shows. Growing the buffer sets makes only the buffers whose size changes: TIES after RAM makes its
// tie counts and keeps the inputs (and their host copy) the device would otherwise clear again.
import { afterAll, describe, expect, it } from 'vitest';
import type { FloatDtype } from '../../format/dtype.ts';
import { testParams, changedTensorInput, mergeBytes } from '../../test/tensors.ts';
import type { MethodName } from '../../methods/types.ts';
import type { MergeEngine } from '../contract.ts';
import type { TensorInput, TensorStats } from '../../methods/tensors.ts';
import { createCpuEngine } from '../cpu-engine.ts';
import { openGpuHarness, withGpuEngine } from '../../test/gpu-harness.ts';

const opened = await openGpuHarness();
const harness = opened.harness;
afterAll(() => harness?.close());

const AGENTS = 3;
const WINDOW = 4_096;

type Job =
  | { kind: 'analyze'; tensor: TensorInput }
  | { kind: 'merge'; tensor: TensorInput; method: MethodName; outDtype: FloatDtype };

function tensor(name: string, dtype: FloatDtype, numel: number, seed: number): TensorInput {
  return changedTensorInput(name, dtype, numel, { seed, agents: AGENTS, rate: 0.2 });
}

async function runJob(engine: MergeEngine, job: Job): Promise<Uint8Array | TensorStats> {
  if (job.kind === 'analyze') return engine.analyze(job.tensor, 0);
  return mergeBytes(engine, job.tensor, {
    params: testParams(job.method, AGENTS, 5),
    lambdas: [1.25, 0.75, 1.5],
    outDtype: job.outDtype,
  });
}

/** The engines' options: small windows, the studio's copied uploads (outputs poisoned by withGpuEngine). */
const OPTIONS = { agents: AGENTS, maxWindowElements: WINDOW, uploads: 'copied' as const };

/** `job` on a fresh engine. */
const fresh = (job: Job): Promise<Uint8Array | TensorStats> =>
  withGpuEngine(harness!, OPTIONS, (engine) => runJob(engine, job));

/** Labels of the buffers `body` creates on the harness's device. */
async function created(body: () => Promise<void>): Promise<string[]> {
  const device = harness!.device;
  const create = device.createBuffer;
  const labels: string[] = [];
  device.createBuffer = (descriptor: GPUBufferDescriptor): GPUBuffer => {
    labels.push(descriptor.label ?? '(unlabelled)');
    return create(descriptor);
  };
  try {
    await body();
  } finally {
    device.createBuffer = create;
  }
  return labels;
}

/** The buffer-set parts among `labels` ("MergeEngine.set0.inputs" → "inputs"), sorted. */
function setParts(labels: string[]): string[] {
  return labels
    .filter((l) => /\.set\d\./.test(l))
    .map((l) => l.replace(/^.*\.set\d\./, ''))
    .sort();
}

describe.skipIf(!harness)(`one engine kept across jobs ${opened.skip ?? ''}`, () => {
  it('gives every job the result of a fresh engine and of the CPU engine, and a growth makes only the parts whose size changes', async () => {
    const a = [
      tensor('model.layers.0.mlp.up_proj.weight', 'BF16', 3 * WINDOW + 17, 1),
      tensor('model.layers.0.self_attn.q_proj.weight', 'BF16', 999, 2),
    ];
    const b = [tensor('model.layers.1.mlp.down_proj.weight', 'F32', 2 * WINDOW - 5, 3)];
    const jobs: Job[] = [
      ...a.map((t): Job => ({ kind: 'analyze', tensor: t })),
      ...a.map((t): Job => ({ kind: 'merge', tensor: t, method: 'ram', outDtype: 'BF16' })),
      ...a.map((t): Job => ({ kind: 'merge', tensor: t, method: 'ties', outDtype: 'BF16' })),
      ...b.map((t): Job => ({ kind: 'merge', tensor: t, method: 'dare_ties', outDtype: 'F32' })),
      ...b.map((t): Job => ({ kind: 'analyze', tensor: t })),
      ...a.map((t): Job => ({ kind: 'merge', tensor: t, method: 'ramplus_tl', outDtype: 'BF16' })),
    ];
    const results: (Uint8Array | TensorStats)[] = [];
    const madeByJob: string[][] = [];
    await withGpuEngine(harness!, OPTIONS, async (kept) => {
      for (const job of jobs) {
        let result: Uint8Array | TensorStats | undefined;
        madeByJob.push(await created(async () => void (result = await runJob(kept, job))));
        results.push(result!);
      }
    });
    const cpu = createCpuEngine({ agents: AGENTS, maxWindowElements: WINDOW });
    for (const [i, job] of jobs.entries()) {
      const what = `job ${i}: ${job.kind} ${job.tensor.name}${job.kind === 'merge' ? ` ${job.method}` : ''}`;
      expect(results[i], what).toEqual(await fresh(job));
      if (job.kind === 'analyze' || job.outDtype !== 'F32')
        expect(results[i], what).toEqual(await runJob(cpu, job));
    }
    // The statistics made the sets; a merge after them (a smaller output) made no part of them anew,
    // TIES after it only its tie counts; the F32 tensor's wider inputs made inputs, and a 16-bit
    // merge after it again nothing.
    expect(setParts(madeByJob[0]!)).toContain('inputs');
    expect(setParts(madeByJob[2]!)).toEqual([]);
    expect(setParts(madeByJob[4]!)).toEqual(['tieCounts', 'tieCounts']);
    expect(setParts(madeByJob[6]!)).toContain('inputs');
    expect(setParts(madeByJob[8]!)).toEqual([]);
    expect(harness!.liveBuffers()).toEqual([]);
  });

  it("grows the outputs alone where the inputs are as large: the inputs are kept, the result a fresh engine's", async () => {
    const t = tensor('model.layers.2.mlp.up_proj.weight', 'BF16', 2 * WINDOW, 4);
    const wider: Job = { kind: 'merge', tensor: t, method: 'ram', outDtype: 'F32' };
    let out: Uint8Array | TensorStats | undefined;
    const made = await withGpuEngine(harness!, OPTIONS, async (engine) => {
      await runJob(engine, { kind: 'merge', tensor: t, method: 'ram', outDtype: 'BF16' });
      return created(async () => void (out = await runJob(engine, wider)));
    });
    expect(out).toEqual(await fresh(wider));
    expect(setParts(made)).toEqual(['output', 'output', 'readback', 'readback']);
    expect(harness!.liveBuffers()).toEqual([]);
  });
});
