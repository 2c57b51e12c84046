// F64 tensors the merge would copy from the base although an agent changed them (issue 38): the engines
// merge BF16, F16 and F32 only, so such a tensor is refused by name rather than dropped in silence.
import type { Model } from '../format/model.ts';
import { throwIfAborted } from '../io/abort.ts';

/**
 * The F64 tensors (a float dtype the engines do not merge, so the merge copies the base's) that some
 * agent holds with other bytes: copying would drop that agent's change without a word (issue 38).
 * Compared byte for byte, 16 MiB at a time.
 */
export async function changedF64Tensors(
  base: Model,
  agents: readonly Model[],
  signal?: AbortSignal,
): Promise<string[]> {
  const changed: string[] = [];
  const chunk = 16 << 20;
  for (const tensor of base.tensors.values()) {
    if (tensor.dtype !== 'F64') continue;
    const total = tensor.end - tensor.begin;
    const source = base.source(tensor.file);
    let differs = false;
    for (const agent of agents) {
      const other = agent.tensors.get(tensor.name);
      if (!other || other.dtype !== 'F64' || other.end - other.begin !== total) continue;
      const theirs = agent.source(other.file);
      for (let done = 0; done < total && !differs; done += chunk) {
        throwIfAborted(signal);
        const length = Math.min(chunk, total - done);
        const a = await source.read(tensor.offset + done, length);
        const b = await theirs.read(other.offset + done, length);
        for (let i = 0; i < length; i++)
          if (a[i] !== b[i]) {
            differs = true;
            break;
          }
      }
      if (differs) break;
    }
    if (differs) changed.push(tensor.name);
  }
  return changed;
}
