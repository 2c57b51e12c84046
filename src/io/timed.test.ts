// The stage timers: reads and writes pass through unchanged, and the clock counts every byte moved
// and only the timed calls' time.
import { describe, expect, it } from 'vitest';
import { memoryFolder } from './sink.ts';
import { memorySource } from './source.ts';
import { StageClock, timedFolder, timedSource } from './timed.ts';

describe('timed sources and folders', () => {
  it('reads the same bytes and counts each read', async () => {
    const bytes = Uint8Array.from({ length: 100 }, (_, i) => (i * 37) & 255);
    const clock = new StageClock();
    let delays = 0;
    const source = timedSource(memorySource('m', bytes), clock, async () => {
      delays++;
    });
    expect(await source.read(10, 20)).toEqual(bytes.subarray(10, 30));
    const into = new Uint8Array(7);
    expect(await source.read(93, 7, into)).toEqual(bytes.subarray(93, 100));
    expect(into).toEqual(bytes.subarray(93, 100));
    expect(clock.bytes).toBe(27);
    expect(delays).toBe(2);
    expect(clock.ms).toBeGreaterThanOrEqual(0);
    await expect(source.read(95, 10)).rejects.toThrow();
    expect(clock.bytes).toBe(37);
  });

  it('writes the same file and counts the bytes written', async () => {
    const folder = memoryFolder('out');
    const clock = new StageClock();
    const timed = timedFolder(folder, clock);
    const sink = await timed.create('a.bin');
    await sink.write(new Uint8Array([1, 2, 3]));
    await sink.write(new Uint8Array([4, 5]));
    await sink.close();
    expect(clock.bytes).toBe(5);
    expect(await timed.list()).toEqual(['a.bin']);
    const back = await folder.open('a.bin');
    expect(await back.read(0, back.size)).toEqual(new Uint8Array([1, 2, 3, 4, 5]));
  });

  it('adds the time a slow call takes', async () => {
    const clock = new StageClock();
    await clock.time(() => new Promise((resolve) => setTimeout(resolve, 30)));
    expect(clock.ms).toBeGreaterThanOrEqual(25);
  });
});
