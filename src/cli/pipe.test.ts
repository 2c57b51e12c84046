// A reader that stops early (`inspect | head`, `merge … 2>&1 | head -2`) closes the pipe under the
// command: it must neither print a stack trace nor kill a merge half-way (which left `.OUT.partial`
// behind and blocked every later merge to that folder, issue 38 item 6); and a `.OUT.partial` left by
// a merge that was killed is reclaimed once its owner is provably gone, and only then.

import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { hostname, tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { BIN, runCli } from '../test/cli.ts';
import { OWNER_FILE } from './output.ts';
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

describe('a working folder left by a merge that was killed', () => {
  async function inputs(name: string) {
    const base = await writeModelFolder(join(dir, `${name}-base`), [floatTensor('w', 'F32', [2], [1, 2])]);
    const agent = await writeModelFolder(join(dir, `${name}-agent`), [floatTensor('w', 'F32', [2], [1, 3])]);
    return ['--base', base, '--model', agent, '--method', 'ram', '--cpu'];
  }
  function leaveStaging(out: string, owner?: object) {
    const staging = join(dir, `.${out}.partial`);
    mkdirSync(staging);
    writeFileSync(join(staging, 'model.safetensors'), 'half');
    if (owner) writeFileSync(join(staging, OWNER_FILE), JSON.stringify(owner));
    return staging;
  }

  it('is reclaimed when its owner process no longer runs', async () => {
    const dead = spawnSync(process.execPath, ['-e', 'console.log(process.pid)'], { encoding: 'utf8' });
    leaveStaging('reclaim', { pid: Number(dead.stdout.trim()), host: hostname() });
    const out = join(dir, 'reclaim');
    const result = await runCli(['merge', ...(await inputs('reclaim')), '--out', out]);
    expect(result.stderr).toMatch(/Note: removed .*\.reclaim\.partial, left by a merge that no longer runs/);
    expect(result.code).toBe(0);
    expect(readdirSync(out)).not.toContain(OWNER_FILE);
    expect(readdirSync(dir).filter((n) => n.includes('reclaim.partial'))).toEqual([]);
  });

  it.each([
    ['a live process', { pid: process.pid, host: hostname() }, /\(process \d+ on /],
    ['another host', { pid: 1, host: `not-${hostname()}` }, /\(process 1 on not-/],
    ['no owner file', undefined, /exists\. If no merge is running/],
  ])('is left alone when it belongs to %s', async (name, owner, message) => {
    const out = `kept-${name.replace(/\W+/g, '-')}`;
    const staging = leaveStaging(out, owner);
    const result = await runCli(['merge', ...(await inputs(out)), '--out', join(dir, out)]);
    expect(result.code).toBe(1);
    expect(result.stderr).toMatch(message);
    expect(readdirSync(staging)).toContain('model.safetensors');
  });
});
