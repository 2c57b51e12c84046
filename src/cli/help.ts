// The command's help: `merge-studio --help` lists every command, `merge-studio COMMAND --help` one
// command's flags, generated from the method registry and the parameter specs.
import { METHOD_LIST } from '../methods/registry/index.ts';
import { specOf } from '../methods/params.ts';
import { flagUsage, PARAM_FLAGS } from './args.ts';

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

const PATH_LINE = 'PATH is a .safetensors file or a model folder (single or sharded).';

const INSPECT_HELP = `merge-studio inspect PATH [--json [OUT.json]]

Lists a checkpoint's tensors (name, dtype, shape, bytes) and checks the file as the merge reads it.
--json writes the listing as JSON (to stdout without a file name, or - ).
${PATH_LINE}`;

const ANALYZE_HELP = `merge-studio analyze --base PATH --model PATH [--model PATH ...] [--epsilon E] [--r R] [--alpha A]
                     [--read-dtype bf16|f16|f32|stored] --json OUT.json [--cpu]

Counts, per tensor and layer, which elements each agent changed (|τ| > ε), which are shared and which
unique, and RAM+'s rescale factors, as the studio's statistics show them; --json writes them (the
studio's statistics export has the same shape; merge --stats-in reads it back).
${PATH_LINE}`;

const MERGE_HELP = `${MERGE_LINE}
merge-studio merge --config RECIPE.yaml --out DIR [--cpu]

${PATH_LINE}
Methods (--method NAME; each reads the flags listed):
${METHOD_LIST.map((d) => `  ${d.name.padEnd(17)}${d.help}\n${' '.repeat(19)}${d.parameters.map(flagOf).join(' ')}`).join('\n')}
Parameters (${PER_AGENT_FLAGS.join(', ')}: once per --model, in order, or once for all):
${PARAMETER_LINES}
--config reads mergekit YAML with mergekit's meaning (its defaults, gradients, filters); a file of
  several documents runs them in order, each named stage written to DIR.stages/NAME.
--model takes a PEFT LoRA adapter folder too (a recipe's model: BASE+ADAPTER as well): its τ is s·B·A,
  made tensor by tensor as the merge reads it. --adapter writes a merge of LoRA agents as one PEFT
  adapter (their ranks concatenated) instead of a model: task_arithmetic and linear only, the methods
  that are weighted sums of τ.`;

const EVAL_HELP = `merge-studio eval --model PATH [--model PATH ...] --probes FILE.jsonl [--chat] [--max-new-tokens N]
                  [--json OUT.json] [--memory-budget BYTES] [--cpu]
merge-studio eval --base PATH --model AGENT ... --candidate "METHOD [FLAG=VALUE ...]" ... --probes FILE.jsonl

eval scores each model on the probes (JSONL lines {"prompt", "completion", "set"}): the completion's
  NLL in nats, its top-1 tokens and, with --max-new-tokens, a greedy continuation; --json writes them
  (- for stdout). The models share the first tokenizer.json among them; --chat renders prompts with
  the chat template. With --base and --candidate, each candidate merge of the base and the --model
  agents ("ramplus r=0.3", "ties density=0.7,0.5") is scored beside them without being written,
  each tensor merged as the merge command would write it.
Llama, Mistral, Qwen2 and Qwen3 folders (config.json, safetensors, tokenizer.json) are read layer by
  layer within --memory-budget.`;

const ARENA_HELP = `merge-studio arena MODEL_PATH [--json OUT.json] [--episodes N]

Scores a model of the demo architecture (the studio's embedded demo checkpoints) on every demo task.`;

/** What every command that reads models shares. */
const SHARED_HELP = `--read-dtype D rounds every model's values to D as they are read, before τ, masks, statistics and
  merges (a recipe's dtype sets it too); stored keeps each model's own. Default: stored where every
  model stores a tensor alike, else the base's dtype (f32 agents over a bf16 base compare at bf16).
--cpu runs the CPU reference instead of WebGPU (slow; for machines without any adapter).
--window-elements N caps the elements per GPU window (default 2^23; smaller uses less memory).
--memory-budget BYTES bounds all GPU window buffers, their staging copies, the next tensor read
  ahead and the output queued for the disk together (default 536870912, 512 MiB); windows shrink to
  fit it. What is left keeps windows on the GPU between a counting pass and the merge (TIES,
  Breadcrumbs, tensor-local RAM+, DARE's l1), so that they read each input once; where some were read
  twice, the merge names the budget that would keep them and the --window-elements that would read
  more of them once within this one.`;

/** `merge-studio COMMAND --help`: that command's usage alone. */
export const COMMAND_HELP: Record<string, string> = {
  inspect: INSPECT_HELP,
  analyze: `${ANALYZE_HELP}\n${SHARED_HELP}`,
  merge: `${MERGE_HELP}\n${SHARED_HELP}`,
  eval: EVAL_HELP,
  arena: ARENA_HELP,
};

const firstLines = (help: string) => help.slice(0, help.indexOf('\n\n'));

export const USAGE = `merge-studio: merge RL-trained agent checkpoints that share one base model.

${Object.values(COMMAND_HELP)
  .map((help) => `  ${firstLines(help).replaceAll('\n', '\n  ')}`)
  .join('\n')}

merge-studio COMMAND --help lists a command's flags and what they do; merge-studio --version its version.
${PATH_LINE}`;
