// The worker's lineage samples are taken once per pair of opened models: a check after one more agent
// arrives reads only that agent's sample, and a newly opened base or agent is sampled again.
import { describe, expect, it } from 'vitest';
import { openModel, type Model } from '../format/model.ts';
import { serializeSafetensors } from '../format/write.ts';
import { memorySource } from '../io/source.ts';
import { sampleDerivation } from '../driver/derivation.ts';
import { derivationSample } from './models.ts';

/** A one-tensor F32 model of fresh random values whose reads are counted in `reads.count`. */
async function counted(name: string, values: Float32Array, reads: { count: number }): Promise<Model> {
  const bytes = serializeSafetensors([
    { name: 'w', dtype: 'F32', shape: [values.length], data: new Uint8Array(values.buffer) },
  ]);
  const source = memorySource('model.safetensors', bytes);
  const model = await openModel(name, [
    {
      name: 'model.safetensors',
      source: {
        ...source,
        read: (offset, length, into) => {
          reads.count++;
          return source.read(offset, length, into);
        },
      },
    },
  ]);
  reads.count = 0;
  return model;
}

describe('derivationSample', () => {
  it('samples a pair once, and again for a newly opened model', async () => {
    const values = Float32Array.from({ length: 64 }, () => Math.random() - 0.5);
    const changed = values.map((v, i) => (i % 3 === 0 ? v + 0.25 : v));
    const baseReads = { count: 0 };
    const agentReads = { count: 0 };
    const base = await counted('base', values, baseReads);
    const agent = await counted('agent', changed, agentReads);
    const first = await derivationSample(base, agent);
    const read = [baseReads.count, agentReads.count];
    expect(Math.min(...read)).toBeGreaterThan(0);
    expect(first.sampled).toBe(64);
    expect(first.identical).toBe(64 - 22);
    expect(await derivationSample(base, agent)).toEqual(first);
    expect([baseReads.count, agentReads.count]).toEqual(read);
    expect(first).toEqual(await sampleDerivation(base, agent));
    // The same files opened again are another model: sampled again.
    const reopened = await counted('base', values, baseReads);
    expect(await derivationSample(reopened, agent)).toEqual(first);
    expect(baseReads.count).toBe(read[0]);
    expect(agentReads.count).toBe(3 * (read[1] ?? 0));
  });
});
