// The CPU engine: the reference math behind the MergeEngine interface, for machines with no
// WebGPU adapter (`--cpu`) and as the oracle in driver tests. It holds one whole tensor of every
// input at a time (f64), so its memory is bounded by the largest tensor, not by the model.
import { decodeFloats, dtypeBits, encodeFloats } from '../format/dtype.ts';
import type { MergeEngine, MergeOptions, TensorInput, TensorStats } from '../engine/types.ts';
import { referenceMerge, referenceStats, type ReferenceTensor } from './reference.ts';

const EMIT_ELEMENTS = 1 << 20;

function abortError(): Error {
  const error = new Error('The merge was cancelled.');
  error.name = 'AbortError';
  return error;
}

async function readAll(tensor: TensorInput, agents: number, signal?: AbortSignal): Promise<ReferenceTensor> {
  const bytes = dtypeBits(tensor.dtype) / 8;
  const values: Float64Array[] = [];
  for (let index = 0; index <= agents; index++) {
    if (signal?.aborted) throw abortError();
    const raw = new Uint8Array(tensor.numel * bytes);
    await tensor.read(index, 0, tensor.numel, raw);
    values.push(decodeFloats(tensor.dtype, raw, tensor.numel));
  }
  return { name: tensor.name, dtype: tensor.dtype, base: values[0]!, agents: values.slice(1) };
}

export function createCpuEngine(options: { agents: number }): MergeEngine {
  const agents = options.agents;
  return {
    kind: 'cpu',
    description: 'CPU reference (no GPU)',
    agents,
    async analyze(tensor: TensorInput, epsilon: number, signal?: AbortSignal): Promise<TensorStats> {
      return referenceStats(await readAll(tensor, agents, signal), epsilon);
    },
    async merge(tensor: TensorInput, options: MergeOptions): Promise<void> {
      const input = await readAll(tensor, agents, options.signal);
      options.onProgress?.(tensor.numel * (agents + 1) * (dtypeBits(tensor.dtype) / 8));
      const merged = referenceMerge(input, options.params, options.lambdas);
      for (let start = 0; start < merged.length || start === 0; start += EMIT_ELEMENTS) {
        if (options.signal?.aborted) throw abortError();
        await options.emit(encodeFloats(options.outDtype, merged.subarray(start, start + EMIT_ELEMENTS)));
        if (merged.length === 0) break;
      }
    },
    destroy() {},
  };
}
