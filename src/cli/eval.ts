// `merge-studio eval`: scores base, agents and merges on probe sets with the WGSL forward pass (or the
// f64 CPU reference with --cpu), reading each model folder in place, streamed by layer.

import { readFile, writeFile } from 'node:fs/promises';
import { at } from '../io/checked.ts';
import type { EvalBackend } from '../eval/backend.ts';
import { evaluate, type EvalProgress } from '../eval/evaluate.ts';
import { evalModel, labelsFor } from '../eval/model.ts';
import { sharedTokenizer } from '../eval/shared-tokenizer.ts';
import { parseProbes } from '../eval/probes.ts';
import type { EvalResult } from '../eval/types.ts';
import { candidateWeights } from '../eval/candidate.ts';
import type { MergeEngine } from '../engine/contract.ts';
import { isMethod, validateParams } from '../methods/defaults.ts';
import { METHODS, type MethodParams } from '../methods/types.ts';
import type { EvalModel } from '../eval/evaluate.ts';
import { loadModel, num, PARAM_FLAGS, paramsFromFlags, UsageError, type Values } from './args.ts';
import { modelFilePaths, refuseOutputsOnInputs } from './collisions.ts';

async function makeBackend(
  cpu: boolean | undefined,
): Promise<{ backend: EvalBackend; description: string; device?: GPUDevice }> {
  if (cpu) {
    const { createCpuEvalBackend } = await import('../eval/cpu-backend.ts');
    return { backend: createCpuEvalBackend(), description: 'CPU reference (f64)' };
  }
  const { nodeEngineDevice } = await import('./node-gpu.ts');
  const { createGpuEvalBackend } = await import('../eval/gpu/gpu-backend.ts');
  const { device, description } = await nodeEngineDevice();
  return { backend: createGpuEvalBackend(device), device, description };
}

/**
 * A candidate merge as `--candidate` gives it: a method then its parameters by flag name,
 * "ramplus r=0.3", "ties density=0.7,0.5 weight=1,1" (per-agent values comma-separated).
 */
export function parseCandidate(text: string, agents: number): { label: string; params: MethodParams } {
  const [method, ...pairs] = text.trim().split(/\s+/);
  if (!method || !isMethod(method))
    throw new UsageError(`--candidate "${text}": start with a method (${METHODS.join(', ')})`);
  const values: Record<string, string | string[] | boolean> = {};
  for (const pair of pairs) {
    const match = /^([a-z][a-z-]*)=(\S+)$/.exec(pair);
    const entry = match && PARAM_FLAGS.find((f) => f.flag === match[1]);
    if (!match || !entry)
      throw new UsageError(
        `--candidate "${text}": "${pair}" is not FLAG=VALUE with one of ${PARAM_FLAGS.map((f) => f.flag).join(', ')}`,
      );
    const value = at(match, 2, 'candidate value');
    if (entry.spec.kind === 'boolean') values[value === 'false' ? `no-${entry.flag}` : entry.flag] = true;
    else values[entry.flag] = entry.spec.scope === 'agent' ? value.split(',') : value;
  }
  const params = paramsFromFlags(values as Values, method, agents);
  const problems = validateParams(params, agents);
  if (problems.length) throw new UsageError(`--candidate "${text}": ${problems.join('; ')}`);
  return { label: text.trim().split(/\s+/).join(' '), params };
}

function progressLine(p: EvalProgress, labels: readonly string[]): string {
  const what =
    p.phase === 'score'
      ? `scoring, layer ${p.layer}/${p.layers}`
      : `generating token ${p.step}/${p.steps} (weights ${p.generation}), layer ${p.layer}/${p.layers}`;
  return `eval  model ${p.model + 1}/${p.models} ${labels[p.model]}: ${what}`;
}

/** The sets × models table printed after a run: mean NLL per token and top-1 rate. */
export function formatEvalTable(result: EvalResult): string {
  const labels = result.models.map((m) => m.label);
  const width = Math.max(12, ...labels.map((l) => l.length + 2));
  const head = `${'set'.padEnd(16)}${'tokens'.padStart(8)}  ${labels.map((l) => l.padStart(width)).join('')}`;
  const lines = result.sets.map(
    (s) =>
      `${s.set.slice(0, 15).padEnd(16)}${String(s.tokens).padStart(8)}  ${s.meanNll
        .map((nll, m) =>
          `${nll.toFixed(3)} ${(at(s.top1Rate, m, 'top1Rate') * 100).toFixed(0).padStart(3)}%`.padStart(
            width,
          ),
        )
        .join('')}`,
  );
  return [`mean NLL per token (nats) and top-1 rate`, head, ...lines].join('\n');
}

export async function runEval(values: Values): Promise<void> {
  const paths = [...(values.base ? [values.base] : []), ...(values.model ?? [])];
  if (paths.length === 0) throw new UsageError('eval needs at least one --model PATH');
  if (values.base && !values.candidate?.length)
    throw new UsageError('--base is for --candidate merges; give the models to score with --model');
  if (!values.probes) throw new UsageError('eval needs --probes FILE.jsonl');
  const maxNew = num(values['max-new-tokens'], 'max-new-tokens') ?? 0;
  if (!Number.isInteger(maxNew) || maxNew < 0 || maxNew > 4096)
    throw new UsageError('--max-new-tokens must be a whole number from 0 to 4096');
  const budget = num(values['memory-budget'], 'memory-budget');
  if (budget !== undefined && !(Number.isInteger(budget) && budget >= 2 ** 20))
    throw new UsageError('--memory-budget must be a whole number of bytes, at least 1048576 (1 MiB)');
  const probeText = await readFile(values.probes, 'utf8').catch((error: Error) => {
    throw new UsageError(`--probes ${values.probes}: ${error.message}`);
  });
  const probes = parseProbes(probeText, values.probes);
  const models = await Promise.all(paths.map((path) => loadModel(path)));
  if (values.json && values.json !== '-')
    await refuseOutputsOnInputs(
      [{ flag: '--json', path: values.json }],
      paths.flatMap((path, i) => modelFilePaths(path, at(models, i, 'models'))),
    );
  const labels = labelsFor(paths);
  const { tokenizer, from } = await sharedTokenizer(
    models.map((model, i) => ({ model, label: at(labels, i, 'labels') })),
  );
  const inputs: EvalModel[] = models.map((model, i) =>
    evalModel(model, at(labels, i, 'labels'), at(paths, i, 'paths'), tokenizer.eosIds),
  );
  const candidates = (values.candidate ?? []).map((text) => parseCandidate(text, models.length - 1));
  if (candidates.length && !values.base)
    throw new UsageError('--candidate needs --base PATH (the --model paths are then the agents)');
  const { backend, description, device } = await makeBackend(values.cpu);
  process.stderr.write(`Engine: ${description}; tokens from ${from}\n`);
  let engine: MergeEngine | undefined;
  if (candidates.length) {
    const agents = models.slice(1);
    const first = at(inputs, 0, 'inputs');
    engine = device
      ? (await import('../engine/gpu/gpu-engine.ts')).createGpuEngine(device, {
          agents: agents.length,
          adapterDescription: description,
        })
      : (await import('../engine/cpu-engine.ts')).createCpuEngine({ agents: agents.length });
    const analyses = new Map();
    for (const candidate of candidates) {
      const weights = await candidateWeights(
        { base: at(models, 0, 'models'), agents, engine, analyses },
        candidate,
      );
      inputs.push({
        ref: { path: `merge: ${candidate.label}`, label: candidate.label },
        spec: first.spec,
        weights,
        storedBytes: first.storedBytes,
        eosIds: first.eosIds,
      });
    }
  }
  const controller = new AbortController();
  const onSignal = () => controller.abort();
  process.once('SIGINT', onSignal);
  const tty = process.stderr.isTTY;
  let last = 0;
  const started = Date.now();
  try {
    const result = await evaluate(backend, inputs, probes, tokenizer, {
      chat: values.chat === true,
      maxNewTokens: maxNew,
      ...(budget === undefined ? {} : { memoryBudget: budget }),
      signal: controller.signal,
      onProgress: (p) => {
        const now = Date.now();
        if (tty)
          process.stderr.write(
            `\r${progressLine(p, labels).slice(0, (process.stderr.columns ?? 100) - 1)}\x1b[K`,
          );
        else if (now - last > 5000) {
          last = now;
          process.stderr.write(`${progressLine(p, labels)}\n`);
        }
      },
    });
    if (tty) process.stderr.write('\n');
    const seconds = (Date.now() - started) / 1000;
    process.stderr.write(
      `Scored ${probes.length} probes on ${inputs.length} models in ${seconds.toFixed(1)} s\n`,
    );
    const text = `${JSON.stringify(result, null, 2)}\n`;
    if (values.json === '-') process.stdout.write(text);
    else {
      if (values.json) await writeFile(values.json, text);
      process.stdout.write(`${formatEvalTable(result)}\n`);
    }
  } finally {
    process.off('SIGINT', onSignal);
    engine?.destroy();
    backend.destroy();
    await Promise.all(
      models.flatMap((m) => m.files.map((f) => (f.source as { close?: () => Promise<void> }).close?.())),
    );
  }
}
