// `npm run bench:eval`: a Qwen2-0.5B-shaped model (24 layers, hidden 896, vocab 151936, bf16; random
// weights, the fixture tokenizer) and one agent scored on the fixture probes by the CLI (dawn.node)
// and by the studio in headless Chromium (the built app, the Evaluate step), each under the default
// memory budget: wall time, tokens/s (every probe token through every model), peak memory of the
// CLI's process tree and of Chromium's processes, and whether the two sides' numbers agree.
import { copyFile, mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { chromium } from '@playwright/test';
import { formatBytes } from '../format/inspect.ts';
import type { EvalResult } from '../eval/types.ts';
import { benchSet, cli, seconds } from './cli-set.ts';
import { processesWith, sampleMemory } from './memory.ts';
import { CHROMIUM_ARGS, loadSet, serve } from './studio.ts';
import type {} from '../state/test-api.ts';

const { values } = parseArgs({
  options: {
    layers: { type: 'string', default: '24' },
    hidden: { type: 'string', default: '896' },
    vocab: { type: 'string', default: '151936' },
    'max-new-tokens': { type: 'string', default: '0' },
    /** Probe lines to score (default: the fixture probes of set "facts", 48 tokens a model). */
    probes: { type: 'string' },
    port: { type: 'string', default: '5290' },
    work: { type: 'string', default: '.bench' },
    'cli-only': { type: 'boolean', default: false },
    /** A folder for screenshots of the Evaluate step with its result, light and dark (docs/screenshots). */
    screenshots: { type: 'string' },
    help: { type: 'boolean', short: 'h' },
  },
});
if (values.help) {
  process.stdout.write(
    'npm run bench:eval -- [--layers 24] [--hidden 896] [--vocab 151936] [--max-new-tokens 0] [--probes FILE.jsonl] [--cli-only] [--screenshots DIR] [--port 5290] [--work .bench]\n',
  );
  process.exit(0);
}

const FIXTURES = new URL('../test/eval-fixtures/', import.meta.url).pathname;
// SwiftShader runs a 0.5B model at a few tokens a second: the short "facts" set keeps a run in minutes.
const PROBES =
  values.probes ??
  (await (async () => {
    const lines = (await readFile(join(FIXTURES, 'probes.jsonl'), 'utf8')).split('\n');
    const path = join(values.work, 'eval-bench-probes.jsonl');
    await mkdir(values.work, { recursive: true });
    await writeFile(path, `${lines.filter((l) => l.includes('"set": "facts"')).join('\n')}\n`);
    return path;
  })());
const maxNew = Number(values['max-new-tokens']);

const set = await benchSet({
  layers: Number(values.layers),
  hidden: Number(values.hidden),
  vocab: Number(values.vocab),
  agents: 1,
  workDir: values.work,
});
// The generated set has no tokenizer: the fixture's (its ids are all below the set's vocabulary).
for (const model of set.models)
  for (const file of ['tokenizer.json', 'tokenizer_config.json'])
    if (!existsSync(join(set.dir, model, file)))
      await copyFile(join(FIXTURES, 'qwen2', file), join(set.dir, model, file));

const models = set.models.map((m) => join(set.dir, m));
const cliJson = join(values.work, 'eval-cli.json');
const cliRun = await cli([
  'eval',
  ...models.flatMap((m) => ['--model', m]),
  '--probes',
  PROBES,
  '--max-new-tokens',
  String(maxNew),
  '--json',
  cliJson,
]);
const cliResult = JSON.parse(await readFile(cliJson, 'utf8')) as EvalResult;
const tokens = cliResult.examples.reduce((n, e) => n + e.promptTokens + e.completionTokens, 0);
const rowsOf = (ms: number) => (tokens * models.length) / (ms / 1000);

const lines = [
  `Set: ${set.dir}: ${set.models.length} models of ${formatBytes(set.modelBytes)} (Qwen2 widths, hidden ${values.hidden}, ${values.layers} layers, vocab ${values.vocab}, bf16); ${cliResult.examples.length} probes, ${tokens} tokens per model, max new tokens ${maxNew}; default memory budget.`,
  '',
  '| Side | Wall | Tokens/s (scored) | Peak memory (RSS) | Numbers |',
  '|---|---|---|---|---|',
  `| CLI (dawn.node) | ${seconds(cliRun.ms)} | ${rowsOf(cliRun.ms).toFixed(1)} | ${formatBytes(cliRun.peak.rss)} | — |`,
];

if (!values['cli-only']) {
  const server = await serve(join(values.work, 'studio-build'), Number(values.port));
  const profile = await mkdtemp(join(tmpdir(), 'merge-studio-eval-bench-'));
  const context = await chromium.launchPersistentContext(profile, {
    executablePath: process.env.CHROMIUM_PATH ?? '/usr/bin/chromium',
    headless: true,
    args: CHROMIUM_ARGS,
  });
  try {
    const page = context.pages()[0] ?? (await context.newPage());
    await page.goto(`http://127.0.0.1:${values.port}/`);
    await loadSet(page, set.dir, 1);
    await page.getByTestId('eval-probe-input').setInputFiles([PROBES]);
    await page.getByTestId('eval-max-new-tokens').fill(String(maxNew));
    const sampler = sampleMemory(() => processesWith(profile));
    const started = performance.now();
    await page.getByTestId('eval-run').click();
    await page.getByTestId('eval-result').waitFor({ state: 'attached', timeout: 3_600_000 });
    const ms = performance.now() - started;
    const peak = await sampler.stop();
    const studio = JSON.parse(
      (await page.getByTestId('eval-result').getAttribute('data-json')) ?? '{}',
    ) as EvalResult;
    const same =
      JSON.stringify(studio.examples) === JSON.stringify(cliResult.examples) &&
      JSON.stringify(studio.sets) === JSON.stringify(cliResult.sets);
    if (values.screenshots)
      for (const scheme of ['light', 'dark'] as const) {
        await page.emulateMedia({ colorScheme: scheme });
        await page.setViewportSize({ width: 1280, height: 800 });
        await page.getByTestId('eval-panel').screenshot({
          path: join(values.screenshots, `eval-l${values.layers}-${scheme}.png`),
        });
      }
    lines.push(
      `| Studio (Chromium) | ${seconds(ms)} | ${rowsOf(ms).toFixed(1)} | ${formatBytes(peak.rss)} (PSS ${formatBytes(peak.pss)}) | ${same ? 'equal to the CLI' : 'DIFFER from the CLI'} |`,
    );
  } finally {
    await context.close();
    server.kill('SIGTERM');
    if (server.pid) process.kill(-server.pid, 'SIGTERM');
    await rm(profile, { recursive: true, force: true });
  }
}
process.stdout.write(`${lines.join('\n')}\n`);
