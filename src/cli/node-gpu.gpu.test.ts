// The dawn.node lifetime fix, tested the way it failed: a child process drops its references to
// the instance, forces garbage collection and runs hot (optimised) JS between compute rounds.
import { spawnSync } from 'node:child_process';
import { describe, expect, it } from 'vitest';

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
