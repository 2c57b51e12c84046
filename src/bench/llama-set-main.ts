// `npm run gen:llama -- --layers 24 --out DIR`: writes a Llama/Qwen2-shaped sharded base + agents
// set (see llama-set.ts). Defaults give Qwen2-0.5B's shapes (5.15 GB over base + 3 agents); smaller
// --hidden / --vocab give the same layout in megabytes.
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { formatBytes } from '../format/inspect.ts';
import { numel } from '../format/safetensors.ts';
import { nodeFolder } from '../io/node.ts';
import { llamaSpecs, writeLlamaSet, type LlamaSetOptions } from './llama-set.ts';

const { values } = parseArgs({
  options: {
    layers: { type: 'string', default: '24' },
    hidden: { type: 'string', default: '896' },
    intermediate: { type: 'string' },
    vocab: { type: 'string', default: '151936' },
    agents: { type: 'string', default: '3' },
    seed: { type: 'string', default: '1' },
    'shard-kb': { type: 'string', default: '2000000' },
    out: { type: 'string' },
    help: { type: 'boolean', short: 'h' },
  },
});

function int(name: string, text: string | undefined): number | undefined {
  if (text === undefined) return undefined;
  const n = Number(text);
  if (!Number.isInteger(n) || n < 1) throw new Error(`--${name} must be a positive integer, got ${text}`);
  return n;
}

const USAGE =
  'usage: npm run gen:llama -- --out DIR [--layers 24] [--hidden 896] [--intermediate N] [--vocab 151936] [--agents 3] [--seed 1] [--shard-kb 2000000]\n' +
  '  Writes a Qwen2-shaped sharded bf16 base and agents (random weights, RL-like sparse updates) into DIR.\n';
if (values.help) {
  process.stdout.write(USAGE);
  process.exit(0);
}
if (!values.out) {
  process.stderr.write(USAGE);
  process.exit(2);
}
const options: LlamaSetOptions = {
  layers: int('layers', values.layers)!,
  hidden: int('hidden', values.hidden)!,
  intermediate: int('intermediate', values.intermediate),
  vocab: int('vocab', values.vocab)!,
  agents: int('agents', values.agents)!,
  seed: int('seed', values.seed)!,
  shardBytes: int('shard-kb', values['shard-kb'])! * 1000,
};
const bytes = llamaSpecs(options).reduce((sum, s) => sum + numel(s.shape) * 2, 0);
const out = values.out;
process.stderr.write(`Writing ${options.agents + 1} models of ${formatBytes(bytes)} each to ${out}…\n`);
const names = await writeLlamaSet(options, (name) => nodeFolder(join(out, name)));
process.stderr.write(`Wrote ${names.map((n) => join(out, n)).join(', ')}\n`);
