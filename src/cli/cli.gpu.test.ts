// The command line on WebGPU (SwiftShader in CI): the SPEC worked example, sharded inputs with
// tensors spanning many GPU windows (checked against --cpu byte for byte), and memory that stays
// bounded by the window size rather than the model size.
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { encodeFloats } from '../format/dtype.ts';
import { nodeFolder } from '../io/node.ts';
import { at, must } from '../io/checked.ts';
import { layoutSafetensors, SafetensorsStreamWriter, type TensorSpec } from '../format/write.ts';
import { runCli } from '../test/cli.ts';
import { floatTensor, rng, WORKED_EXAMPLE, writeModelFolder } from '../test/fixtures.ts';

let dir: string;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'merge-studio-cli-gpu-'));
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

describe('merge-studio merge on WebGPU', () => {
  it('runs the SPEC worked example to the listed values and says which adapter it used', async () => {
    await writeModelFolder(join(dir, 'we-base'), [floatTensor('w', 'F32', [3, 3], WORKED_EXAMPLE.base)]);
    const models: string[] = [];
    for (const [name, values] of Object.entries(WORKED_EXAMPLE.agents)) {
      await writeModelFolder(join(dir, `we-${name}`), [floatTensor('w', 'F32', [3, 3], values)]);
      models.push('--model', join(dir, `we-${name}`));
    }
    for (const [method, want] of [
      ['ram', WORKED_EXAMPLE.ram],
      ['ramplus', WORKED_EXAMPLE.ramplus],
    ] as const) {
      const out = join(dir, `we-out-${method}`);
      const result = await runCli([
        'merge',
        '--base',
        join(dir, 'we-base'),
        ...models,
        '--method',
        method,
        '--out',
        out,
      ]);
      expect(result.stderr).toMatch(/Engine: .*(swiftshader|SwiftShader|vulkan|Vulkan)/i);
      expect(result.code).toBe(0);
      const bytes = await readFile(join(out, 'model.safetensors'));
      const headerLength = Number(bytes.readBigUInt64LE(0));
      const values = new Float32Array(
        bytes.buffer.slice(bytes.byteOffset + 8 + headerLength, bytes.byteOffset + bytes.length),
      );
      want.forEach((value, i) => expect(values[i]).toBeCloseTo(value, 6));
    }
  });

  it('matches --cpu byte for byte on sharded bf16 inputs whose tensors span many windows', async () => {
    const random = rng(42);
    const shapes: [string, number[]][] = [
      ['a.weight', [129, 77]],
      ['b.weight', [3001]],
      ['c.weight', [64, 64]],
    ];
    const base = shapes.map(([name, shape]) => ({
      name,
      shape,
      values: Array.from({ length: shape.reduce((x, y) => x * y, 1) }, () => random() - 0.5),
    }));
    await writeModelFolder(
      join(dir, 'sh-base'),
      base.map((t) => floatTensor(t.name, 'BF16', t.shape, t.values)),
      { shardBytes: 12_000 },
    );
    const models: string[] = [];
    for (let a = 0; a < 3; a++) {
      const density = at([0.05, 0.4, 0.6], a);
      const tensors = base.map((t) =>
        floatTensor(
          t.name,
          'BF16',
          t.shape,
          t.values.map((v) => (random() < density ? v + (random() - 0.5) * 0.02 : v)),
        ),
      );
      await writeModelFolder(join(dir, `sh-agent-${a}`), tensors, { shardBytes: 9_000 });
      models.push('--model', join(dir, `sh-agent-${a}`));
    }
    for (const method of ['ramplus', 'ties', 'dare_linear']) {
      const common = [
        'merge',
        '--base',
        join(dir, 'sh-base'),
        ...models,
        '--method',
        method,
        '--shard-size',
        '15000',
      ];
      const gpu = await runCli([
        ...common,
        '--window-elements',
        '1000',
        '--out',
        join(dir, `sh-gpu-${method}`),
      ]);
      expect(gpu.code, gpu.stderr).toBe(0);
      const cpu = await runCli([...common, '--cpu', '--out', join(dir, `sh-cpu-${method}`)]);
      expect(cpu.code, cpu.stderr).toBe(0);
      for (const file of [
        'model-00001-of-00002.safetensors',
        'model-00002-of-00002.safetensors',
        'model.safetensors.index.json',
      ])
        expect(await readFile(join(dir, `sh-gpu-${method}`, file)), `${method} ${file}`).toEqual(
          await readFile(join(dir, `sh-cpu-${method}`, file)),
        );
    }
  });

  it('merges a 1 GB set with peak memory bounded by the window, not the model', async () => {
    const rows = 2048;
    const cols = 3072;
    const tensors = 20;
    const specs: TensorSpec[] = Array.from({ length: tensors }, (_, i) => ({
      name: `layers.${String(i).padStart(2, '0')}.weight`,
      dtype: 'BF16',
      shape: [rows, cols],
    }));
    const random = rng(7);
    const baseValues = Array.from({ length: rows * cols }, () => random() - 0.5);
    const baseBytes = encodeFloats('BF16', baseValues);
    const write = async (name: string, bytes: Uint8Array) => {
      const layout = layoutSafetensors(specs);
      const writer = new SafetensorsStreamWriter(
        await nodeFolder(join(dir, name)).create('model.safetensors'),
        layout,
        'model.safetensors',
      );
      for (const spec of layout.tensors) await writer.writeTensorBytes(spec.name, bytes);
      await writer.close();
    };
    await write('big-base', baseBytes);
    const models: string[] = [];
    for (let a = 0; a < 3; a++) {
      await write(
        `big-agent-${a}`,
        encodeFloats(
          'BF16',
          baseValues.map((v) => (random() < 0.2 ? v + 0.01 : v)),
        ),
      );
      models.push('--model', join(dir, `big-agent-${a}`));
    }
    const inputBytes = 4 * tensors * rows * cols * 2;
    const result = await runCli(
      [
        'merge',
        '--base',
        join(dir, 'big-base'),
        ...models,
        '--method',
        'ram',
        '--window-elements',
        String(1 << 20),
        '--out',
        join(dir, 'big-out'),
      ],
      { timeoutMs: 240_000 },
    );
    expect(result.code, result.stderr).toBe(0);
    const peak = /peak memory ([\d.]+) (MiB|GiB)/.exec(result.stderr);
    expect(peak, result.stderr).not.toBeNull();
    const [, amount, unit] = must(peak, 'the peak memory line');
    const peakBytes = Number(amount) * (unit === 'GiB' ? 2 ** 30 : 2 ** 20);
    // The process may not hold more than a fraction of what it read: windows, not models.
    expect(peakBytes).toBeLessThan(inputBytes / 3);
  }, 300_000);
});
