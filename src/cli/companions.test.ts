// Issue 38, items 2 and 8: what the base's companion files (tokenizer, vocabulary, chat template) may
// carry into a merged folder, which users upload, and what a weights name that is not a regular file
// is called. Run through the real command on the CPU reference.
import { execFileSync } from 'node:child_process';
import { mkdir, mkdtemp, readdir, readFile, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCli } from '../test/cli.ts';
import { floatTensor, WORKED_EXAMPLE, writeModelFolder } from '../test/fixtures.ts';

let dir: string;
const SECRET = 'PRIVATE KEY 7f3a9c';

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'merge-studio-companions-'));
  await writeFile(join(dir, 'id_rsa'), `{"key": "${SECRET}"}`);
  for (const [name, values] of Object.entries(WORKED_EXAMPLE.agents))
    await writeModelFolder(join(dir, name), [floatTensor('w', 'F32', [3, 3], values)]);
});

afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

const agents = () => Object.keys(WORKED_EXAMPLE.agents).flatMap((name) => ['--model', join(dir, name)]);

async function baseFolder(path: string): Promise<string> {
  return writeModelFolder(path, [floatTensor('w', 'F32', [3, 3], WORKED_EXAMPLE.base)], {
    config: { model_type: 'toy', hidden_size: 3 },
  });
}

async function merge(base: string, out: string) {
  const result = await runCli([
    'merge',
    '--base',
    base,
    ...agents(),
    '--method',
    'ram',
    '--cpu',
    '--out',
    out,
  ]);
  expect(result.stderr).not.toContain('Error');
  expect(result.code).toBe(0);
  return result;
}

/** Every byte the merged folder holds, as text, so that no copy of the secret can hide in it. */
async function folderText(out: string): Promise<string> {
  const names = await readdir(out);
  return (await Promise.all(names.map((n) => readFile(join(out, n), 'latin1')))).join('\n');
}

describe('companion files of the base', () => {
  it('a symlink out of the model folder is not followed: skipped, with a warning naming it', async () => {
    const base = await baseFolder(join(dir, 'base-leak'));
    await symlink(join(dir, 'id_rsa'), join(base, 'tokenizer.json'));
    await writeFile(join(base, 'special_tokens_map.json'), '{"eos_token": "</s>"}');
    const out = join(dir, 'out-leak');
    const { stderr } = await merge(base, out);
    const names = await readdir(out);
    expect(names).not.toContain('tokenizer.json');
    expect(names).toContain('special_tokens_map.json');
    expect(await folderText(out)).not.toContain(SECRET);
    expect(stderr).toMatch(
      /Warning: .*base-leak: tokenizer\.json is a symbolic link to .*id_rsa, outside the model folder/,
    );
  });

  it('symlinks inside the folder and into the Hugging Face cache’s blobs are followed', async () => {
    const repo = join(dir, 'hub', 'models--org--base');
    const snapshot = join(repo, 'snapshots', 'abc123');
    await baseFolder(snapshot);
    await mkdir(join(repo, 'blobs'), { recursive: true });
    await writeFile(join(repo, 'blobs', 'e3b0c4'), '{"model": {"type": "BPE"}}');
    await symlink('../../blobs/e3b0c4', join(snapshot, 'tokenizer.json'));
    await writeFile(join(snapshot, 'real_vocab'), 'a\nb\n');
    await symlink('real_vocab', join(snapshot, 'vocab.txt'));
    const out = join(dir, 'out-hub');
    const { stderr } = await merge(snapshot, out);
    expect(stderr).not.toContain('Warning');
    expect(await readFile(join(out, 'tokenizer.json'), 'utf8')).toBe('{"model": {"type": "BPE"}}');
    expect(await readFile(join(out, 'vocab.txt'), 'utf8')).toBe('a\nb\n');
  });

  it('a file that is not what its name says is skipped, naming the file and the fault', async () => {
    const base = await baseFolder(join(dir, 'base-bad'));
    await writeFile(join(base, 'tokenizer_config.json'), '{"unterminated": ');
    await writeFile(join(base, 'merges.txt'), new Uint8Array([0x61, 0xff, 0xfe, 0x62]));
    const binary = new Uint8Array([0x0a, 0x80, 0x01, 0xff, 0x00, 0x12]);
    await writeFile(join(base, 'tokenizer.model'), binary);
    const out = join(dir, 'out-bad');
    const { stderr } = await merge(base, out);
    const names = await readdir(out);
    expect(names).not.toContain('tokenizer_config.json');
    expect(names).not.toContain('merges.txt');
    // SentencePiece's model is binary: copied as it is.
    expect(new Uint8Array(await readFile(join(out, 'tokenizer.model')))).toEqual(binary);
    expect(stderr).toMatch(/tokenizer_config\.json is not JSON/);
    expect(stderr).toMatch(/merges\.txt is not UTF-8 text/);
  });
});

describe('a weights name that is not a regular file', () => {
  it.each([
    ['a named pipe (FIFO)', async (path: string) => execFileSync('mkfifo', [path])],
    ['a folder', (path: string) => mkdir(path)],
    ['a symbolic link to nothing', (path: string) => symlink(join(dir, 'nowhere'), path)],
  ])('is called %s, not missing', async (what, make) => {
    const base = await baseFolder(join(dir, `base-${what.split(' ')[1]}`));
    await rm(join(base, 'model.safetensors'));
    await make(join(base, 'model.safetensors'));
    const result = await runCli(['inspect', base]);
    expect(result.code).toBe(1);
    expect(result.stderr).toContain(`model.safetensors: is ${what}`);
    expect(result.stderr).not.toMatch(/missing|no \.safetensors/);
  });
});
