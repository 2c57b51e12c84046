// Outputs that would land on inputs (issue 38, item 1): the paths compared directly, then the real
// command given its own inputs as --stats and --json, with the inputs checked unchanged byte for byte.
import { createHash } from 'node:crypto';
import { link, mkdir, mkdtemp, readFile, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCli } from '../test/cli.ts';
import { floatTensor, writeModelFolder } from '../test/fixtures.ts';
import { refuseOutputsOnInputs } from './collisions.ts';

let dir: string;
const sha = async (path: string): Promise<string> =>
  createHash('sha256')
    .update(await readFile(path))
    .digest('hex');

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'merge-studio-collisions-'));
  const values = (shift: number) => Array.from({ length: 12 }, (_, i) => i / 7 + shift);
  await writeModelFolder(join(dir, 'base'), [floatTensor('w', 'F32', [3, 4], values(0))]);
  await writeModelFolder(join(dir, 'agent'), [floatTensor('w', 'F32', [3, 4], values(0.25))]);
});

afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

describe('refuseOutputsOnInputs', () => {
  it('refuses an output that is an input by path, through a symlink or as a hard link', async () => {
    const input = join(dir, 'base', 'model.safetensors');
    await expect(refuseOutputsOnInputs([{ flag: '--stats', path: input }], [input])).rejects.toThrow(
      /--stats .*model\.safetensors is the input .*model\.safetensors: writing there would destroy it/,
    );
    const viaLink = join(dir, 'via-link.json');
    await symlink(input, viaLink);
    await expect(refuseOutputsOnInputs([{ flag: '--json', path: viaLink }], [input])).rejects.toThrow(
      /--json .*via-link\.json is the input/,
    );
    const hard = join(dir, 'hard.json');
    await link(input, hard);
    await expect(refuseOutputsOnInputs([{ flag: '--json', path: hard }], [input])).rejects.toThrow(
      /hard\.json is the input .*\(a link to it\)/,
    );
    const dotted = join(dir, 'agent', '..', 'base', 'model.safetensors');
    await expect(refuseOutputsOnInputs([{ flag: '--stats', path: dotted }], [input])).rejects.toThrow(
      /is the input/,
    );
  });

  it('refuses a folder output holding an input, two outputs that are one file, a file inside --out', async () => {
    const input = join(dir, 'agent', 'model.safetensors');
    await expect(
      refuseOutputsOnInputs([{ flag: '--out', path: dir, folder: true }], [input]),
    ).rejects.toThrow(/--out .* holds the input .*agent.*model\.safetensors/);
    const out = join(dir, 'merged');
    await expect(
      refuseOutputsOnInputs(
        [
          { flag: '--out', path: out, folder: true },
          { flag: '--stats', path: join(out, 'stats.json') },
        ],
        [input],
      ),
    ).rejects.toThrow(/--stats .*stats\.json is inside --out .*merged, the model folder being written/);
    await expect(
      refuseOutputsOnInputs(
        [
          { flag: '--stats', path: join(dir, 's.json') },
          { flag: '--json', path: join(dir, '.', 's.json') },
        ],
        [input],
      ),
    ).rejects.toThrow(/are one path/);
  });

  it('lets separate paths through, new ones included', async () => {
    const input = join(dir, 'agent', 'model.safetensors');
    await mkdir(join(dir, 'elsewhere'), { recursive: true });
    await writeFile(join(dir, 'elsewhere', 'old.json'), '{}');
    await expect(
      refuseOutputsOnInputs(
        [
          { flag: '--out', path: join(dir, 'new-out'), folder: true },
          { flag: '--stats', path: join(dir, 'elsewhere', 'old.json') },
        ],
        [input, join(dir, 'base', 'model.safetensors')],
      ),
    ).resolves.toBeUndefined();
  });
});

describe('the command keeps its inputs', () => {
  const base = () => join(dir, 'base');
  const baseWeights = () => join(dir, 'base', 'model.safetensors');
  const agentArgs = () => ['--base', base(), '--model', join(dir, 'agent'), '--cpu'];

  it('merge --stats BASE/model.safetensors is refused before anything is written', async () => {
    const before = await sha(baseWeights());
    const out = join(dir, 'merge-out');
    const result = await runCli([
      'merge',
      ...agentArgs(),
      '--method',
      'ram',
      '--out',
      out,
      '--stats',
      baseWeights(),
    ]);
    expect(result.code, result.stderr).toBe(2);
    expect(result.stderr).toMatch(/--stats .*model\.safetensors is the input/);
    expect(await sha(baseWeights())).toBe(before);
    await expect(readFile(join(out, 'README.md'))).rejects.toThrow(/ENOENT/);
  });

  it('analyze --json and inspect --json on an input file are refused, the file unchanged', async () => {
    const before = await sha(baseWeights());
    const analyzed = await runCli(['analyze', ...agentArgs(), '--json', baseWeights()]);
    expect(analyzed.code, analyzed.stderr).toBe(2);
    expect(analyzed.stderr).toMatch(/--json .*model\.safetensors is the input/);
    const inspected = await runCli(['inspect', base(), '--json', baseWeights()]);
    expect(inspected.code, inspected.stderr).toBe(2);
    expect(inspected.stderr).toMatch(/--json .*model\.safetensors is the input/);
    expect(await sha(baseWeights())).toBe(before);
  });
});
