// The dawn.node lifetime fix, tested the way it failed: a child process drops its references to
// the instance, forces garbage collection and runs hot (optimised) JS between compute rounds. And the
// tick pacing (tick-pacing.ts), against dawn.node's real tick callback.
import { spawnSync } from 'node:child_process';
import { afterAll, describe, expect, it } from 'vitest';
import { openGpuHarness } from '../test/gpu-harness.ts';
import { pacingCounts } from './tick-pacing.ts';

function probe(mode: 'retain' | 'drop') {
  return spawnSync(
    process.execPath,
    ['--expose-gc', '--import', './bin/register.mjs', 'src/test/dawn-lifetime-probe.ts', mode],
    { encoding: 'utf8', timeout: 30_000 },
  );
}

describe('dawn.node instance lifetime', () => {
  it('survives GC and optimised code when the instance is held by acquireNodeGpu (3 runs)', () => {
    for (let run = 0; run < 3; run++) {
      const result = probe('retain');
      expect(result.stdout, result.stderr.slice(-400)).toContain('ok');
      expect(result.status).toBe(0);
    }
  });

  it('crashes or hangs without it, so the test above can fail', () => {
    const result = probe('drop');
    expect(result.status === 0 && result.stdout.includes('ok')).toBe(false);
  });
});

const opened = await openGpuHarness();
const harness = opened.harness;
afterAll(() => harness?.close());

describe.skipIf(!harness)(`dawn.node's device ticks ${opened.skip ?? ''}`, () => {
  it('go through the pacer acquireNodeGpu installed while a map is pending', async () => {
    if (!harness) throw new Error('skipped above without a harness');
    const counts = pacingCounts();
    expect(counts).not.toBeNull();
    const before = (counts?.spun ?? 0) + (counts?.paced ?? 0);
    const device = harness.device;
    // Work the map must wait for: a buffer cleared and copied on the queue.
    const source = device.createBuffer({
      label: 'tick.source',
      size: 1 << 24,
      usage: GPUBufferUsage.COPY_SRC | GPUBufferUsage.COPY_DST,
    });
    const target = device.createBuffer({
      label: 'tick.target',
      size: 1 << 24,
      usage: GPUBufferUsage.COPY_DST | GPUBufferUsage.MAP_READ,
    });
    try {
      await harness.run(async () => {
        const encoder = device.createCommandEncoder();
        encoder.clearBuffer(source);
        encoder.copyBufferToBuffer(source, 0, target, 0, 1 << 24);
        device.queue.submit([encoder.finish()]);
        await target.mapAsync(GPUMapMode.READ);
        expect(new Uint32Array(target.getMappedRange()).every((w) => w === 0)).toBe(true);
        target.unmap();
      });
      // dawn.node's own tick callback was told apart from every other (spun or paced by the timer).
      expect((counts?.spun ?? 0) + (counts?.paced ?? 0)).toBeGreaterThan(before);
    } finally {
      source.destroy();
      target.destroy();
    }
  });
});
