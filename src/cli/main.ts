// The `merge-studio` command line: inspect, analyze, merge and arena, on the same engine as the studio.
import { parseArgs } from 'node:util';
import { writeFile } from 'node:fs/promises';
import { escapeTerminal, inspectModel, formatInspect } from '../format/inspect.ts';
import { loadModel, num, OPTIONS, UsageError, type Values } from './args.ts';
import { COMMAND_HELP, USAGE } from './help.ts';
import { modelFilePaths, refuseOutputsOnInputs } from './collisions.ts';
import packageJson from '../../package.json' with { type: 'json' };

/** Defined (true) in the built bundle only (vite.cli.config.ts). */
declare const __MERGE_STUDIO_BUNDLE__: boolean | undefined;
const VERSION = `${packageJson.version} (${typeof __MERGE_STUDIO_BUNDLE__ === 'undefined' ? 'from the TypeScript sources' : 'built bundle'})`;

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
  if (values.version) {
    process.stdout.write(`merge-studio ${VERSION}\n`);
    return 0;
  }
  if (values.help && command !== undefined && command in COMMAND_HELP) {
    process.stdout.write(`${COMMAND_HELP[command]}\n`);
    return 0;
  }
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
      const help = (command !== undefined && COMMAND_HELP[command]) || USAGE;
      process.stderr.write(`merge-studio: ${escapeTerminal(e.message)}\n\n${help}\n`);
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
