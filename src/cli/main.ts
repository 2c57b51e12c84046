// The `merge-studio` command line: inspect, analyze, merge and arena, on the same engine as the studio.
import { parseArgs } from 'node:util';
import { writeFile } from 'node:fs/promises';
import { escapeTerminal, inspectModel, formatInspect } from '../format/inspect.ts';
import { METHOD_LIST } from '../methods/registry/index.ts';
import { specOf } from '../methods/params.ts';
import { flagUsage, loadModel, num, OPTIONS, PARAM_FLAGS, UsageError, type Values } from './args.ts';
import { modelFilePaths, refuseOutputsOnInputs } from './collisions.ts';

/** The flag that sets a parameter, as a method's line of the help names it. */
function flagOf(key: Parameters<typeof specOf>[0]): string {
  const { kind, flag } = specOf(key);
  return flag === undefined ? '' : kind === 'boolean' ? `--[no-]${flag}` : `--${flag}`;
}

/** Words wrapped to lines of at most `width`, each line after the first indented by `indent`. */
function wrap(words: string[], indent: number, width = 104): string {
  const lines: string[] = [];
  let line = '';
  for (const word of words) {
    if (line && line.length + 1 + word.length > width - (lines.length ? indent : 0)) {
      lines.push(line);
      line = word;
    } else line = line ? `${line} ${word}` : word;
  }
  lines.push(line);
  return lines.join(`\n${' '.repeat(indent)}`);
}

const MERGE_LINE = wrap(
  [
    'merge-studio merge --base PATH --model PATH [--model PATH ...] --method NAME',
    ...PARAM_FLAGS.map(({ spec, flag }) => `[${flagUsage(spec, flag)}]`),
    '[--dtype bf16|f16|f32]',
    '[--read-dtype bf16|f16|f32|stored]',
    '[--shard-size BYTES] --out DIR [--stats OUT.json] [--cpu] [--adapter]',
    '[--stats-in STATS.json (from analyze: RAM+ without a statistics pass)]',
  ],
  21,
);

const PER_AGENT_FLAGS = PARAM_FLAGS.filter(({ spec }) => spec.scope === 'agent').map(
  ({ flag }) => `--${flag}`,
);

/** Each parameter's flag and what it does (its spec's help). */
const PARAMETER_LINES = PARAM_FLAGS.map(
  ({ spec, flag }) => `  ${wrap([flagUsage(spec, flag).padEnd(26), ...spec.help.split(' ')], 29, 104)}`,
).join('\n');

export const USAGE = `merge-studio: merge RL-trained agent checkpoints that share one base model.

  merge-studio inspect PATH [--json]
  merge-studio analyze --base PATH --model PATH [--model PATH ...] [--epsilon E] [--r R] [--alpha A]
                       [--read-dtype bf16|f16|f32|stored] --json OUT.json [--cpu]
  ${MERGE_LINE}
  merge-studio merge --config RECIPE.yaml --out DIR [--cpu]
  merge-studio eval --model PATH [--model PATH ...] --probes FILE.jsonl [--chat] [--max-new-tokens N]
                    [--json OUT.json] [--memory-budget BYTES] [--cpu]
  merge-studio eval --base PATH --model AGENT ... --candidate "METHOD [FLAG=VALUE ...]" ... --probes FILE.jsonl
  merge-studio arena MODEL_PATH [--json OUT.json] [--episodes N]

PATH is a .safetensors file or a model folder (single or sharded).
Methods (--method NAME; each reads the flags listed):
${METHOD_LIST.map((d) => `  ${d.name.padEnd(17)}${d.help}\n${' '.repeat(19)}${d.parameters.map(flagOf).join(' ')}`).join('\n')}
Parameters (${PER_AGENT_FLAGS.join(', ')}: once per --model, in order, or once for all):
${PARAMETER_LINES}
--config reads mergekit YAML with mergekit's meaning (its defaults, gradients, filters); a file of
  several documents runs them in order, each named stage written to DIR.stages/NAME.
eval scores each model on the probes (JSONL lines {"prompt", "completion", "set"}): the completion's
  NLL in nats, its top-1 tokens and, with --max-new-tokens, a greedy continuation; --json writes them
  (- for stdout). The models share the first tokenizer.json among them; --chat renders prompts with
  the chat template. With --base and --candidate, each candidate merge of the base and the --model
  agents ("ramplus r=0.3", "ties density=0.7,0.5") is scored beside them without being written,
  each tensor merged as the merge command would write it.
--read-dtype D rounds every model's values to D as they are read, before τ, masks, statistics and
  merges (a recipe's dtype sets it too); stored keeps each model's own. Default: stored where every
  model stores a tensor alike, else the base's dtype (f32 agents over a bf16 base compare at bf16).
--model takes a PEFT LoRA adapter folder too (a recipe's model: BASE+ADAPTER as well): its τ is s·B·A,
  made tensor by tensor as the merge reads it. --adapter writes a merge of LoRA agents as one PEFT
  adapter (their ranks concatenated) instead of a model: task_arithmetic and linear only, the methods
  that are weighted sums of τ.
--cpu merges with the CPU reference instead of WebGPU (slow; for machines without any adapter).
--window-elements N caps the elements per GPU window (default 2^23; smaller uses less memory).
--memory-budget BYTES bounds all GPU window buffers, their staging copies, the next tensor read
  ahead and the output queued for the disk together (default 536870912, 512 MiB); windows shrink to
  fit it. What is left keeps windows on the GPU between a counting pass and the merge (TIES,
  Breadcrumbs, tensor-local RAM+, DARE's l1), so that they read each input once; where some were read
  twice, the merge names the budget that would keep them and the --window-elements that would read
  more of them once within this one.`;

async function inspect(positionals: string[], values: Values): Promise<void> {
  const path = positionals[0];
  if (!path || positionals.length > 1) throw new UsageError('inspect takes one PATH');
  const model = await loadModel(path);
  const report = inspectModel(model);
  if (values.json !== undefined) {
    const text = `${JSON.stringify(report, null, 2)}\n`;
    if (values.json === '' || values.json === '-') process.stdout.write(text);
    else {
      await refuseOutputsOnInputs([{ flag: '--json', path: values.json }], modelFilePaths(path, model));
      await writeFile(values.json, text);
    }
  } else process.stdout.write(`${formatInspect(report)}\n`);
}

/** `inspect PATH --json` (no file after it) means JSON on stdout; elsewhere --json names a file. */
function bareJsonToStdout(argv: string[]): string[] {
  return argv.map((arg, i) => {
    const next = argv[i + 1];
    return arg === '--json' && (next === undefined || next.startsWith('--')) ? '--json=-' : arg;
  });
}

export async function main(argv: string[]): Promise<number> {
  let parsed;
  try {
    parsed = parseArgs({
      args: bareJsonToStdout(argv),
      options: OPTIONS,
      allowPositionals: true,
      strict: true,
    });
  } catch (error) {
    process.stderr.write(`merge-studio: ${(error as Error).message}\n\n${USAGE}\n`);
    return 2;
  }
  const { positionals } = parsed;
  const values = parsed.values as Values;
  const [command, ...rest] = positionals;
  if (values.help || !command) {
    (values.help ? process.stdout : process.stderr).write(`${USAGE}\n`);
    return values.help ? 0 : 2;
  }
  try {
    if (command === 'inspect') await inspect(rest, values);
    else if (command === 'analyze') await (await import('./merge.ts')).analyze(values);
    else if (command === 'merge') await (await import('./merge.ts')).merge(values);
    else if (command === 'eval') await (await import('./eval.ts')).runEval(values);
    else if (command === 'arena')
      await (
        await import('./arena.ts')
      ).runArena(rest, values.json, num(values.episodes, 'episodes'), loadModel);
    else throw new UsageError(`unknown command "${command}"`);
    return 0;
  } catch (error) {
    const e = error as Error;
    if (e instanceof UsageError) {
      process.stderr.write(`merge-studio: ${escapeTerminal(e.message)}\n\n${USAGE}\n`);
      return 2;
    }
    if (e.name === 'AbortError') {
      const { exitSignal } = await import('./merge.ts');
      const { SIGNAL_EXIT } = await import('./output.ts');
      process.stderr.write('merge-studio: cancelled; nothing was left in the output folder.\n');
      return SIGNAL_EXIT[exitSignal ?? 'SIGINT'] ?? 130;
    }
    process.stderr.write(`merge-studio: ${escapeTerminal(e.message)}\n`);
    if (process.env.MERGE_STUDIO_DEBUG) process.stderr.write(`${e.stack}\n`);
    return 1;
  }
}

/** Streams whose reader has gone (`| head`): nothing more is written to them. */
const closed = new Set<NodeJS.WriteStream>();

/**
 * A reader that stops early (`merge … 2>&1 | head -2`, `inspect | head`) closes the pipe: the next
 * write fails with EPIPE. That is the reader's choice, not a failure of the work: the stream goes
 * quiet and the command runs to its end (a merge still publishes its folder), where an unhandled
 * 'error' event would kill the process mid-merge and print a stack trace.
 */
function quietOnBrokenPipe(stream: NodeJS.WriteStream): void {
  stream.on('error', (error: NodeJS.ErrnoException) => {
    if (error.code !== 'EPIPE') throw error;
    closed.add(stream);
    stream.write = (() => true) as typeof stream.write;
  });
}
quietOnBrokenPipe(process.stdout);
quietOnBrokenPipe(process.stderr);

/** Resolves once everything written to `stream` so far has been handed to the OS (pipes included). */
function drained(stream: NodeJS.WriteStream): Promise<void> {
  if (closed.has(stream)) return Promise.resolve();
  return new Promise((resolve) => {
    stream.once('error', () => resolve());
    stream.write('', () => resolve());
  });
}

const code = await main(process.argv.slice(2));
// process.exit drops what a pipe has not taken yet (a reader stops at 64 KiB): flush first.
await Promise.all([drained(process.stdout), drained(process.stderr)]);
// dawn.node keeps the process alive while its instance is referenced; the work is done.
process.exit(code);
