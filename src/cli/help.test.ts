// The command's own help and version, and the built bundle (dist-cli, made by the tests' global
// setup) against the sources it was built from: the same help and the same merged bytes.
import { mkdtemp, readFile, readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { METHOD_LIST } from '../methods/registry/index.ts';
import { runCli } from '../test/cli.ts';
import { floatTensor, WORKED_EXAMPLE, writeModelFolder } from '../test/fixtures.ts';
import { COMMAND_HELP } from './help.ts';

const FROM_SOURCE = { MERGE_STUDIO_FROM_SOURCE: '1' };

describe('merge-studio COMMAND --help', () => {
  it.each(Object.keys(COMMAND_HELP))(
    '%s --help prints that command’s usage alone, exit 0',
    async (command) => {
      const result = await runCli([command, '--help']);
      expect(result.code).toBe(0);
      expect(result.stderr).toBe('');
      expect(result.stdout.startsWith(`merge-studio ${command} `)).toBe(true);
      // No other command's usage line.
      for (const other of Object.keys(COMMAND_HELP).filter((c) => c !== command))
        expect(result.stdout).not.toContain(`merge-studio ${other} `);
    },
  );

  it('merge --help names every method and every flag a method reads', async () => {
    const { stdout } = await runCli(['merge', '--help']);
    for (const method of METHOD_LIST) expect(stdout).toContain(`  ${method.name} `);
    for (const flag of ['--weight', '--density', '--read-dtype', '--memory-budget', '--config', '--adapter'])
      expect(stdout).toContain(flag);
  });

  it('a usage error under a command shows that command’s usage, exit 2', async () => {
    const result = await runCli(['inspect']);
    expect(result.code).toBe(2);
    expect(result.stderr).toContain('inspect takes one PATH');
    expect(result.stderr).toContain('merge-studio inspect PATH');
    expect(result.stderr).not.toContain('merge-studio merge ');
  });

  it('--help alone lists every command and points to COMMAND --help', async () => {
    const { code, stdout } = await runCli(['--help']);
    expect(code).toBe(0);
    for (const command of Object.keys(COMMAND_HELP)) expect(stdout).toContain(`merge-studio ${command} `);
    expect(stdout).toContain('merge-studio COMMAND --help');
  });
});

describe('the built bundle', () => {
  let dir: string;
  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'merge-studio-bundle-'));
  });
  afterAll(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it('is what the command runs, and says so with --version', async () => {
    const bundled = await runCli(['--version']);
    const sources = await runCli(['--version'], { env: FROM_SOURCE });
    expect(bundled.stdout).toMatch(/^merge-studio \d+\.\d+\.\d+ \(built bundle\)\n$/);
    expect(sources.stdout).toMatch(/^merge-studio \d+\.\d+\.\d+ \(from the TypeScript sources\)\n$/);
  });

  it('prints the help the sources print', async () => {
    for (const args of [['--help'], ['merge', '--help'], ['eval', '--help']])
      expect((await runCli(args)).stdout).toBe((await runCli(args, { env: FROM_SOURCE })).stdout);
  });

  it('merges to the bytes the sources merge to (on the CPU reference)', async () => {
    const base = join(dir, 'base');
    await writeModelFolder(base, [floatTensor('w', 'F32', [3, 3], WORKED_EXAMPLE.base)]);
    const agents: string[] = [];
    for (const [name, values] of Object.entries(WORKED_EXAMPLE.agents)) {
      agents.push(join(dir, name));
      await writeModelFolder(join(dir, name), [floatTensor('w', 'F32', [3, 3], values)]);
    }
    const args = (out: string) => [
      'merge',
      '--base',
      base,
      ...agents.flatMap((a) => ['--model', a]),
      '--method',
      'ties',
      '--density',
      '0.5',
      '--cpu',
      '--out',
      join(dir, out),
    ];
    const bundled = await runCli(args('bundle'));
    const sources = await runCli(args('sources'), { env: FROM_SOURCE });
    expect(bundled.code).toBe(0);
    expect(sources.code).toBe(0);
    const names = (await readdir(join(dir, 'bundle'))).sort();
    expect(names).toEqual((await readdir(join(dir, 'sources'))).sort());
    expect(names).toContain('model.safetensors');
    for (const name of names)
      expect(await readFile(join(dir, 'bundle', name))).toEqual(await readFile(join(dir, 'sources', name)));
  });
});
