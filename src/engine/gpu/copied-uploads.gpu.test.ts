// GpuEngineOptions.uploads 'copied' (the studio's worker): every window's reads land in the buffer
// set's host memory, which one writeBuffer copies into its inputs. Merges through it equal merges
// through mapped staging buffers and the CPU engine, byte for byte, for every dtype, tensors of one
// window and of many with odd element counts, and methods that read a tensor in several passes with
// and without the base (f32 outputs within the conformance table's bound of the CPU's f64).
import { afterAll, describe, expect, it } from 'vitest';
import type { FloatDtype } from '../../format/dtype.ts';
import { defaultParams } from '../../methods/defaults.ts';
import { changedTensorInput } from '../../test/tensors.ts';
import type { MethodName } from '../../methods/types.ts';
import type { MergeEngine } from '../contract.ts';
import type { TensorInput } from '../../methods/tensors.ts';
import { concatBytes } from '../../io/sink.ts';
import { ulpOf } from '../../methods/float32.ts';
import { createCpuEngine } from '../cpu-engine.ts';
import { createGpuEngine } from './gpu-engine.ts';
import { WRITE_PIECE } from './scheduler.ts';
import { openGpuHarness } from '../../test/gpu-harness.ts';

const opened = await openGpuHarness();
const harness = opened.harness;
afterAll(() => harness?.close());

const AGENTS = 3;

function input(dtype: FloatDtype, numel: number, seed: number): TensorInput {
  return changedTensorInput('model.layers.0.mlp.up_proj.weight', dtype, numel, {
    seed,
    agents: AGENTS,
    rate: 0.3,
  });
}

/** The same tensor, with every ArrayBuffer its reads were handed noted in `buffers`. */
function noting(tensor: TensorInput, buffers: ArrayBufferLike[]): TensorInput {
  return {
    ...tensor,
    read: (index, start, count, into) => {
      buffers.push(into.buffer);
      return tensor.read(index, start, count, into);
    },
  };
}

async function merged(engine: MergeEngine, tensor: TensorInput, method: MethodName): Promise<Uint8Array> {
  const chunks: Uint8Array[] = [];
  try {
    await engine.merge(tensor, {
      params: defaultParams(method, AGENTS),
      lambdas: [1.1, 1, 1.2],
      outDtype: tensor.dtype,
      emit: async (bytes) => void chunks.push(bytes.slice()),
    });
  } finally {
    engine.destroy();
  }
  return concatBytes(chunks);
}

describe.skipIf(!harness)('the GPU engine with copied uploads', () => {
  const cases: [FloatDtype, number, number][] = [
    ['BF16', 3 * 4_096 - 3, 1_024],
    ['BF16', 777, 1_024],
    ['F16', 2 * 4_096 + 1, 4_096],
    ['F32', 5_001, 2_048],
    // Each window's upload (1 MiB per model) goes in pieces of WRITE_PIECE.
    ['F32', 5 * (1 << 17) + 7, 1 << 18],
  ];
  for (const [dtype, numel, window] of cases)
    for (const method of ['ram', 'ties', 'ramplus_tl', 'dare_ties'] as MethodName[])
      it(`${method}, ${dtype}, ${numel} elements in windows of ${window}: equal to mapped uploads and the CPU engine`, async () => {
        const tensor = input(dtype, numel, numel + method.length);
        const gpu = (uploads: 'mapped' | 'copied') =>
          createGpuEngine(harness!.device, {
            agents: AGENTS,
            adapterDescription: harness!.adapterDescription,
            maxWindowElements: window,
            poisonOutput: true,
            uploads,
          });
        const copiedInto: ArrayBufferLike[] = [];
        const mappedInto: ArrayBufferLike[] = [];
        const queue = harness!.device.queue;
        const writeBuffer = queue.writeBuffer;
        const writes: number[] = [];
        queue.writeBuffer = (...args: Parameters<GPUQueue['writeBuffer']>) => {
          writes.push(args[4] ?? 0);
          writeBuffer.apply(queue, args);
        };
        const copied = await harness!
          .run(() => merged(gpu('copied'), noting(tensor, copiedInto), method))
          .finally(() => (queue.writeBuffer = writeBuffer));
        const mapped = await harness!.run(() => merged(gpu('mapped'), noting(tensor, mappedInto), method));
        const cpu = await merged(createCpuEngine({ agents: AGENTS }), tensor, method);
        const windows = Math.ceil(numel / window);
        expect(copied.length).toBe(numel * (dtype === 'F32' ? 4 : 2));
        expect(copiedInto.length).toBeGreaterThanOrEqual(windows * AGENTS);
        // Copied: the two sets' host memory, and nothing else; mapped: a new range per mapping.
        expect(new Set(copiedInto).size).toBeLessThanOrEqual(2);
        if (windows > 2) expect(new Set(mappedInto).size).toBeGreaterThan(2);
        // Pieces of 1 MiB at most, whole ones where a window's upload is larger.
        expect(WRITE_PIECE).toBe(1 << 20);
        expect(Math.max(...writes)).toBeLessThanOrEqual(1 << 20);
        if (window * AGENTS * 4 > 1 << 20)
          expect(writes.filter((w) => w === 1 << 20).length).toBeGreaterThan(windows);
        expect(Buffer.compare(copied, mapped)).toBe(0);
        if (dtype !== 'F32') expect(Buffer.compare(copied, cpu)).toBe(0);
        else {
          // The CPU engine computes in f64, the GPU in f32: within an ulp of the output and a few f32
          // ulps of the inputs' magnitude (|x| < 1), as the conformance table bounds it.
          const [a, b] = [new Float32Array(copied.buffer), new Float32Array(cpu.buffer)];
          let far = 0;
          for (let i = 0; i < a.length; i++)
            if (Math.abs(a[i]! - b[i]!) > ulpOf(b[i]!, 'F32') + 4 * ulpOf(1, 'F32')) far++;
          expect(far).toBe(0);
        }
      });
});

describe.skipIf(!harness)('the GPU engine’s emitted bytes', () => {
  it('are its mapped read-back, lent until emit resolves and detached after', async () => {
    const tensor = input('BF16', 3 * 1_024 + 5, 41);
    const lent: Uint8Array[] = [];
    const copies: Uint8Array[] = [];
    const engine = createGpuEngine(harness!.device, {
      agents: AGENTS,
      adapterDescription: harness!.adapterDescription,
      maxWindowElements: 1_024,
      uploads: 'copied',
    });
    await harness!.run(async () => {
      try {
        await engine.merge(tensor, {
          params: defaultParams('ram', AGENTS),
          lambdas: [1.1, 1, 1.2],
          outDtype: 'BF16',
          emit: async (bytes) => {
            // Still readable after a wait inside emit: the set is not reused before it resolves.
            await new Promise((resolve) => setTimeout(resolve, 3));
            copies.push(bytes.slice());
            lent.push(bytes);
          },
        });
      } finally {
        engine.destroy();
      }
    });
    expect(lent.length).toBe(4);
    for (const bytes of lent) expect(bytes.byteLength).toBe(0);
    const cpu = await merged(createCpuEngine({ agents: AGENTS }), tensor, 'ram');
    expect(Buffer.compare(concatBytes(copies), cpu)).toBe(0);
  });
});
