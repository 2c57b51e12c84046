// Expected numbers for the studio specs, computed in Node with the project's own CPU reference engine
// from public/demo, and small generated checkpoints (a corrupt one, a mismatched one).
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { analyzeModels, mergeModels } from '../src/driver/driver.ts';
import { type AnalysisResult } from '../src/driver/job.ts';
import { openModel, type Model } from '../src/format/model.ts';
import { readSafetensorsHeader } from '../src/format/safetensors.ts';
import { serializeSafetensors } from '../src/format/write.ts';
import { memoryFolder } from '../src/io/sink.ts';
import { memorySource } from '../src/io/source.ts';
import { createCpuEngine } from '../src/engine/cpu-engine.ts';
import { defaultParams } from '../src/methods/defaults.ts';
import type { MethodName } from '../src/methods/types.ts';
import { at, must } from '../src/io/checked.ts';
import { bf16ToF32 } from '../src/format/dtype.ts';

export const DEMO_DIR = 'public/demo';
export const DEMO_AGENTS = ['key', 'door', 'gems'] as const;

export function demoFile(model: string, file: string): Uint8Array {
  return new Uint8Array(readFileSync(join(DEMO_DIR, model, file)));
}

async function demoModel(name: string): Promise<Model> {
  return openModel(name, [
    {
      name: 'model.safetensors',
      source: memorySource('model.safetensors', demoFile(name, 'model.safetensors')),
    },
    { name: 'config.json', source: memorySource('config.json', demoFile(name, 'config.json')) },
  ]);
}

export async function referenceAnalysis(epsilon = 1e-5): Promise<AnalysisResult> {
  const base = await demoModel('base');
  const agents = await Promise.all(DEMO_AGENTS.map(demoModel));
  return analyzeModels({ base, agents, engine: createCpuEngine({ agents: agents.length }), epsilon });
}

/** The CPU reference merge of the demo with a method's default parameters: file name → bytes. */
export async function referenceMerge(method: MethodName): Promise<Map<string, Uint8Array>> {
  const base = await demoModel('base');
  const agents = await Promise.all(DEMO_AGENTS.map(demoModel));
  const out = memoryFolder('reference');
  await mergeModels({
    base,
    agents,
    engine: createCpuEngine({ agents: agents.length }),
    params: defaultParams(method, agents.length),
    out,
    baseLabel: 'base',
    agentLabels: [...DEMO_AGENTS],
  });
  return out.files;
}

/** The first `bytes` bytes of a demo checkpoint: a header that promises data the file lacks. */
export function truncatedCheckpoint(bytes = 4096): Buffer {
  return Buffer.from(demoFile('key', 'model.safetensors').subarray(0, bytes));
}

/** The key agent with one tensor reshaped, so it no longer matches the base. */
export async function mismatchedCheckpoint(tensor = 'layers.1.weight'): Promise<Buffer> {
  const bytes = demoFile('key', 'model.safetensors');
  const header = await readSafetensorsHeader(memorySource('key', bytes));
  const tensors = header.tensors.map((t) => {
    const data = bytes.subarray(header.dataStart + t.begin, header.dataStart + t.end);
    // The same bytes under a transposed-looking shape: a classic wrong-architecture mix-up.
    if (t.name !== tensor) return { name: t.name, dtype: t.dtype, shape: t.shape, data };
    const [rows = 1, cols = 1] = t.shape;
    return { name: t.name, dtype: t.dtype, shape: [rows * 2, cols / 2], data };
  });
  return Buffer.from(serializeSafetensors(tensors));
}

const bf16 = (bytes: Uint8Array, offset: number): number =>
  bf16ToF32(new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength).getUint16(offset, true));

export interface TieDifference {
  tensor: string;
  index: number;
  got: number;
  want: number;
}

/**
 * The BF16 elements where a merged file differs from the reference. Each must be a unique update
 * (one agent changed it) whose exact value θ₀ + λ·τ lies on the midpoint of the two bf16 values
 * seen: a rounding tie that f32 arithmetic may break either way. Anything else throws.
 */
export async function tieDifferences(
  got: Uint8Array,
  want: Uint8Array,
  lambdas: number[],
): Promise<TieDifference[]> {
  if (got.length !== want.length) throw new Error(`sizes differ: ${got.length} vs ${want.length}`);
  const header = await readSafetensorsHeader(memorySource('want', want));
  if (!Buffer.from(got.subarray(0, header.dataStart)).equals(Buffer.from(want.subarray(0, header.dataStart))))
    throw new Error('the headers differ');
  const inputs = ['base', ...DEMO_AGENTS].map((m) => demoFile(m, 'model.safetensors'));
  const inputHeader = await readSafetensorsHeader(memorySource('base', at(inputs, 0)));
  const found: TieDifference[] = [];
  for (const t of header.tensors) {
    if (t.dtype !== 'BF16') throw new Error(`${t.name}: only BF16 outputs are compared here`);
    const source = must(
      inputHeader.tensors.find((x) => x.name === t.name),
      `${t.name} in the demo base`,
    );
    for (let byte = t.begin; byte < t.end; byte += 2) {
      const pos = header.dataStart + byte;
      if (got[pos] === want[pos] && got[pos + 1] === want[pos + 1]) continue;
      const index = (byte - t.begin) / 2;
      const values = inputs.map((bytes) => bf16(bytes, inputHeader.dataStart + source.begin + index * 2));
      const baseValue = at(values, 0);
      const taus = values.slice(1).map((v) => v - baseValue);
      const movers = taus.flatMap((tau, agent) => (Math.abs(tau) > 1e-5 ? [agent] : []));
      const a = bf16(got, pos);
      const b = bf16(want, pos);
      const mover = movers[0] ?? 0;
      const exact = baseValue + at(lambdas, mover) * at(taus, mover);
      const midpoint = (a + b) / 2;
      const oneUlpApart = Math.abs(a - b) <= Math.abs(midpoint) * 2 ** -7;
      if (movers.length !== 1 || !oneUlpApart || Math.abs(exact - midpoint) > Math.abs(midpoint) * 1e-6)
        throw new Error(`${t.name}[${index}]: got ${a}, reference ${b}, exact ${exact}: not a rounding tie`);
      found.push({ tensor: t.name, index, got: a, want: b });
    }
  }
  return found;
}
