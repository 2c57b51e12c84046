// Every backend of the streaming SHA-256 against Node's one-shot digest of the whole input, on random
// data split at odd chunk boundaries, and the FIPS 180-2 vector "abc".
import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { loadWasmSha256, Sha256, sha256Backend, type Sha256Backend } from './sha256.ts';
import { seededRandom } from '../methods/rng.ts';

describe('Sha256', () => {
  it('uses Node’s built-in hash under Node', () => {
    expect(sha256Backend()).toBe('node');
  });

  it('compiles the WebAssembly hash', async () => {
    expect(await loadWasmSha256()).toBe(true);
  });

  for (const [i, backend] of (['node', 'wasm', 'js'] as Sha256Backend[]).entries())
    it(`${backend}: equals a one-shot digest, whatever the chunks`, async () => {
      await loadWasmSha256();
      const random = seededRandom(5 + i);
      const data = Uint8Array.from({ length: 300_001 }, () => Math.floor(random() * 256));
      const hash = new Sha256(backend);
      for (let at = 0; at < data.length;) {
        const end = Math.min(data.length, at + 1 + Math.floor(random() * 70_000));
        hash.update(data.subarray(at, end));
        at = end;
      }
      // Another hash in progress on the same backend in between: each keeps its own state.
      const other = new Sha256(backend);
      other.update(data.subarray(0, 1000));
      expect(hash.hex()).toBe(createHash('sha256').update(data).digest('hex'));
      expect(other.hex()).toBe(createHash('sha256').update(data.subarray(0, 1000)).digest('hex'));
      const abc = new Sha256(backend);
      abc.update(new TextEncoder().encode('abc'));
      expect(abc.hex()).toBe('ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad');
    });
});
