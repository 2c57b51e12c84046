// The benchmarks' yardstick: how fast this machine reads the input files themselves, in 16 MB chunks.
import { nodeFileSource } from '../io/node.ts';

export async function rawRead(paths: string[]): Promise<{ bytes: number; ms: number }> {
  const chunk = new Uint8Array(16 << 20);
  let bytes = 0;
  const start = performance.now();
  for (const path of paths) {
    const source = await nodeFileSource(path);
    for (let offset = 0; offset < source.size; offset += chunk.length) {
      const length = Math.min(chunk.length, source.size - offset);
      await source.read(offset, length, chunk);
      bytes += length;
    }
    await source.close();
  }
  return { bytes, ms: performance.now() - start };
}
