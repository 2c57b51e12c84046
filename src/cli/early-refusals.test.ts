// Issue 38, item 8: outputs that could only fail after the whole merge are refused before any weights
// are read (no "Engine:" line yet): --out a symbolic link (dangling or not), --stats a folder, and
// --stats on a file system without room for the statistics.
import { spawnSync } from 'node:child_process';
import { mkdir, mkdtemp, readdir, rm, symlink } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BIN, runCli } from '../test/cli.ts';
import { floatTensor, WORKED_EXAMPLE, writeModelFolder } from '../test/fixtures.ts';

let dir: string;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'merge-studio-early-'));
  await writeModelFolder(join(dir, 'base'), [floatTensor('w', 'F32', [3, 3], WORKED_EXAMPLE.base)]);
  for (const [name, values] of Object.entries(WORKED_EXAMPLE.agents))
    await writeModelFolder(join(dir, name), [floatTensor('w', 'F32', [3, 3], values)]);
});

afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

const mergeArgs = (out: string, ...more: string[]) => [
  'merge',
  '--base',
  join(dir, 'base'),
  ...Object.keys(WORKED_EXAMPLE.agents).flatMap((name) => ['--model', join(dir, name)]),
  '--method',
  'ram',
  '--cpu',
  '--out',
  out,
  ...more,
];

describe('refused before any weights are read', () => {
  it('--out a symbolic link to an empty folder', async () => {
    await mkdir(join(dir, 'empty'));
    await symlink(join(dir, 'empty'), join(dir, 'out-link'));
    const result = await runCli(mergeArgs(join(dir, 'out-link')));
    expect(result.code).toBe(2);
    expect(result.stderr).toMatch(/--out .*out-link is a symbolic link \(to .*empty\)/);
    expect(result.stderr).not.toContain('Engine:');
    expect(await readdir(join(dir, 'empty'))).toEqual([]);
  });

  it('--out a dangling symbolic link', async () => {
    await symlink(join(dir, 'nowhere'), join(dir, 'out-dangling'));
    const result = await runCli(mergeArgs(join(dir, 'out-dangling')));
    expect(result.code).toBe(2);
    expect(result.stderr).toMatch(/--out .*out-dangling is a symbolic link/);
    expect(result.stderr).not.toContain('Engine:');
  });

  it('--stats a folder', async () => {
    await mkdir(join(dir, 'stats-folder'));
    const out = join(dir, 'out-stats-folder');
    const result = await runCli(mergeArgs(out, '--stats', join(dir, 'stats-folder')));
    expect(result.code).toBe(2);
    expect(result.stderr).toMatch(/--stats .*stats-folder is a folder/);
    expect(result.stderr).not.toContain('Engine:');
    expect(await readdir(dir)).not.toContain('out-stats-folder');
  });

  // A private mount namespace gives a tiny tmpfs for the statistics without touching the machine.
  const canMount =
    spawnSync('unshare', ['-rm', 'sh', '-c', 'mount -t tmpfs -o size=64k tmpfs /tmp'], { encoding: 'utf8' })
      .status === 0;

  it.skipIf(!canMount)('--stats on a file system without room for the statistics', async () => {
    const statsDir = join(dir, 'tiny-stats');
    await mkdir(statsDir);
    const args = mergeArgs(join(dir, 'out-tiny-stats'), '--stats', join(statsDir, 'stats.json'));
    const script = `mount -t tmpfs -o size=4k tmpfs '${statsDir}' && exec '${process.execPath}' '${BIN}' ${args.map((a) => `'${a}'`).join(' ')}`;
    const child = spawnSync('unshare', ['-rm', 'sh', '-c', script], { encoding: 'utf8', timeout: 60_000 });
    expect(child.status, child.stderr).toBe(1);
    expect(child.stderr).toMatch(/not enough free space for --stats .*stats\.json/);
    expect(child.stderr).not.toContain('Engine:');
    expect(await readdir(dir)).not.toContain('out-tiny-stats');
  });
});
