// `npm run bench:start [-- --runs 15]`: how long `merge-studio` takes to start, from the built bundle
// (dist-cli, what bin/merge-studio.mjs runs) and from the TypeScript sources through tsx
// (MERGE_STUDIO_FROM_SOURCE=1), in alternating runs of the same process, so that the ratio is taken
// on one machine at one load. Each run is a whole process: `--help` (nothing but start-up) and
// `inspect` of a small real checkpoint (start-up plus the reader).
import { spawnSync } from 'node:child_process';
import { parseArgs } from 'node:util';
import { build } from 'vite';

const { values } = parseArgs({
  options: { runs: { type: 'string', default: '15' }, help: { type: 'boolean', short: 'h' } },
});
if (values.help) {
  process.stdout.write(
    'usage: npm run bench:start [-- --runs 15]\n' +
      '  Times `merge-studio --help` and `merge-studio inspect FILE` from the built bundle and from the\n' +
      '  sources, alternating, and prints the medians and their ratio.\n',
  );
  process.exit(0);
}
const runs = Number(values.runs);
if (!Number.isInteger(runs) || runs < 1)
  throw new Error(`--runs must be a positive integer, got ${values.runs}`);

await build({ configFile: 'vite.cli.config.ts' });
const CHECKPOINT = '../shared/checkpoints/sb3-rl-zoo-policies/cartpole-v1_ppo.safetensors';
const commands = { '--help': ['--help'], 'inspect FILE': ['inspect', CHECKPOINT] };
const sides = { bundle: {}, sources: { MERGE_STUDIO_FROM_SOURCE: '1' } };

function seconds(args: string[], env: Record<string, string>): number {
  const start = process.hrtime.bigint();
  const result = spawnSync(process.execPath, ['bin/merge-studio.mjs', ...args], {
    env: { ...process.env, ...env },
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  if (result.status !== 0)
    throw new Error(`merge-studio ${args.join(' ')} failed: ${result.stderr.toString()}`);
  return Number(process.hrtime.bigint() - start) / 1e9;
}

const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[(s.length - 1) / 2]! : (s[s.length / 2 - 1]! + s[s.length / 2]!) / 2;
};

process.stdout.write(
  `| command | built bundle | TypeScript sources (tsx) | sources ÷ bundle |\n|---|---|---|---|\n`,
);
for (const [label, args] of Object.entries(commands)) {
  const times: Record<string, number[]> = { bundle: [], sources: [] };
  for (let i = 0; i < runs; i++)
    for (const [side, env] of Object.entries(sides)) times[side]!.push(seconds(args, env));
  const bundle = median(times.bundle!);
  const sources = median(times.sources!);
  process.stdout.write(
    `| \`merge-studio ${label}\` | ${bundle.toFixed(3)} s | ${sources.toFixed(3)} s | ${(sources / bundle).toFixed(1)} |\n`,
  );
}
process.stdout.write(`(medians of ${runs} alternating runs each)\n`);
