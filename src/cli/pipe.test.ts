// A reader that stops early (`inspect | head`, `merge … 2>&1 | head -2`) closes the pipe under the
// command: it must neither print a stack trace nor kill a merge half-way (which left `.OUT.partial`
// behind and blocked every later merge to that folder, issue 38 item 6).

import { spawnSync } from 'node:child_process';
import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { BIN } from '../test/cli.ts';
import { floatTensor, writeModelFolder } from '../test/fixtures.ts';

const dir = mkdtempSync(join(tmpdir(), 'merge-studio-pipe-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

function sh(command: string) {
  return spawnSync('sh', ['-c', command], { encoding: 'utf8', timeout: 60_000 });
}

describe('a reader that stops early', () => {
  it('inspect | head: the first lines, no stack trace, exit 0', async () => {
    const folder = join(dir, 'many');
    const names = Array.from({ length: 3000 }, (_, i) => `model.layers.${i}.mlp.up_proj.weight`);
    await writeModelFolder(
      folder,
      names.map((name) => floatTensor(name, 'F32', [1], [1])),
    );
    // status of the command, not of head: `; echo $?` inside a subshell of the left side.
    const run = sh(
      `('${process.execPath}' '${BIN}' inspect '${folder}' --json; echo "rc=$?" >&2) | head -c 200`,
    );
    expect(run.stdout.length).toBe(200);
    expect(run.stderr).toContain('rc=0');
    expect(run.stderr).not.toMatch(/EPIPE|at .*\.js|Error/);
  }, 60_000);

  it('merge 2>&1 | head -1: the merge still runs to its end and publishes the folder', async () => {
    const base = await writeModelFolder(join(dir, 'base'), [floatTensor('w', 'F32', [4], [1, 2, 3, 4])]);
    const agent = await writeModelFolder(join(dir, 'agent'), [floatTensor('w', 'F32', [4], [1, 2.5, 3, 4])]);
    const out = join(dir, 'out');
    const run = sh(
      `('${process.execPath}' '${BIN}' merge --base '${base}' --model '${agent}' --method ram --out '${out}' --cpu 2>&1; echo "rc=$?" > '${dir}/rc') | head -1`,
    );
    expect(run.stdout.split('\n').filter(Boolean)).toHaveLength(1);
    expect(sh(`cat '${dir}/rc'`).stdout.trim()).toBe('rc=0');
    expect(readdirSync(out)).toEqual(
      expect.arrayContaining(['model.safetensors', 'README.md', 'mergekit_config.yml']),
    );
    expect(readdirSync(dir).filter((name) => name.includes('partial'))).toEqual([]);
  }, 60_000);
});
