// The analyze and merge commands: models from paths, the engine (WebGPU or --cpu), progress on stderr.
import { abortError } from '../io/abort.ts';
import { readFile, writeFile } from 'node:fs/promises';
import { basename, resolve } from 'node:path';
import type { Model } from '../format/model.ts';
import { at } from '../io/checked.ts';
import { checkUnchanged, fileIdentity, nodeFolder, sha256File } from '../io/node.ts';
import { isMethod, paramProblems, validateParams } from '../methods/defaults.ts';
import { RecipeError, shorten, type Recipe } from '../methods/recipe.ts';
import { methodOf } from '../methods/registry/index.ts';
import { recipeResolver } from '../methods/resolve.ts';
import { METHODS, type MethodParams } from '../methods/types.ts';
import { analyzeModels, mergeModels, predictOutputBytes } from '../driver/driver.ts';
import { type InputFile } from '../driver/job.ts';
import { predictStatsBytes, statsFiles, statsJson, totalsFromStatsJson } from '../driver/stats-json.ts';
import type { MergeEngine } from '../engine/contract.ts';
import {
  DTYPE_FLAGS,
  loadModel,
  num,
  paramsFromFlags,
  readDtypeFlag,
  UsageError,
  type Values,
} from './args.ts';
import { precisionSummary } from '../driver/precision-stats.ts';
import { adapterCoefficients, writeAdapterMerge } from '../driver/adapter-out.ts';
import { loadAgent, Products, resolveModelRef } from './agents.ts';
import { readDtypeOf, sameReads } from '../driver/read-precision.ts';
import { claimOutput, handleSignals, type RunStage } from './output.ts';
import { modelFilePaths, refuseOutputsOnInputs } from './collisions.ts';
import { ProgressPrinter } from './progress.ts';
import { escapeTerminal, formatBytes } from '../format/inspect.ts';
import { runRecipeFile } from './recipe-run.ts';
import { describeWindowCache } from '../driver/job.ts';
import { readOnceWindowFor } from '../engine/gpu/window-cache.ts';
import {
  DEFAULT_MEMORY_BUDGET,
  DEFAULT_WINDOW_ELEMENTS,
  mergeSizes,
  tieRowsPerAgent,
} from '../engine/gpu/plumbing.ts';
import { dtypeBits, isMergeableDtype } from '../format/dtype.ts';
import { derivationVerdict, lineageWarning, sampleDerivation, sampleEvidence } from '../driver/derivation.ts';
import { lambdaRange } from '../driver/model-card.ts';

// Engines load on demand: `inspect` and `arena` never pay for dawn.node.
async function makeEngine(
  cpu: boolean | undefined,
  agents: number,
  windows: WindowOptions = {},
): Promise<MergeEngine> {
  if (cpu) return (await import('../engine/cpu-engine.ts')).createCpuEngine({ agents });
  const { nodeEngineDevice } = await import('./node-gpu.ts');
  const { createGpuEngine } = await import('../engine/gpu/gpu-engine.ts');
  const { device, description } = await nodeEngineDevice();
  return createGpuEngine(device, {
    agents,
    adapterDescription: description,
    ...windows,
  });
}

interface Inputs {
  basePath: string;
  /** Where each agent's files are (an adapter's folder for mergekit's BASE+ADAPTER). */
  modelPaths: string[];
  /** The agents as given, for labels and the recipe. */
  given: string[];
  base: Model;
  agents: Model[];
  /** The product adapter agents compute τ with: the engine's, once made. */
  products: Products;
}

/** The λ the merge applied: per agent, or where λ is per tensor its range (the card lists each). */
function lambdaSummary(result: {
  lambdas: number[];
  tensorLambdas?: Map<string, readonly number[]>;
}): string {
  const { tensorLambdas } = result;
  if (!tensorLambdas) return `λ = [${result.lambdas.map((l) => l.toFixed(4)).join(', ')}]`;
  const ranges = result.lambdas.map((_, t) => lambdaRange(tensorLambdas, t));
  return `λ per tensor = [${ranges.join(', ')}] (each tensor's in README.md, “Per-tensor λ”)`;
}

async function loadInputs(basePath: string | undefined, modelPaths: string[] | undefined): Promise<Inputs> {
  if (!basePath) throw new UsageError('--base PATH is required');
  if (!modelPaths || modelPaths.length === 0) throw new UsageError('give at least one --model PATH');
  const base = await loadModel(basePath);
  const products = new Products();
  const agents: Model[] = [];
  const paths: string[] = [];
  const note = (line: string) => process.stderr.write(`Note: ${escapeTerminal(line)}\n`);
  for (const warning of base.warnings) note(`${basePath}: ${warning}`);
  for (const path of modelPaths) {
    const agent = await loadAgent(path, { model: base, path: basePath }, products, note);
    agents.push(agent.model);
    paths.push(agent.path);
  }
  // The studio's lineage check: an agent of another base would merge into meaningless weights.
  for (const [t, agent] of agents.entries()) {
    const sample = await sampleDerivation(base, agent);
    if (derivationVerdict(sample) !== 'unrelated') continue;
    const warning = lineageWarning([modelPaths[t] ?? agent.name], sampleEvidence(sample));
    process.stderr.write(`Warning: ${warning}\n`);
  }
  return { basePath, modelPaths: paths, given: modelPaths, base, agents, products };
}

function cancellation(): { signal: AbortSignal; received: () => string | undefined; dispose(): void } {
  const controller = new AbortController();
  const handler = handleSignals(
    controller,
    () => 'working',
    () => undefined,
  );
  return { signal: controller.signal, received: handler.signal, dispose: handler.dispose };
}

/** Every file of the model at `path` (the file itself, or the folder's files the model lists). */
interface WindowOptions {
  maxWindowElements?: number;
  memoryBudget?: number;
}

function windowElements(values: Values): WindowOptions {
  const n = num(values['window-elements'], 'window-elements');
  if (n !== undefined && !(Number.isInteger(n) && n >= 2))
    throw new UsageError('--window-elements must be an integer ≥ 2');
  const budget = num(values['memory-budget'], 'memory-budget');
  if (budget !== undefined && !(Number.isInteger(budget) && budget >= 2 ** 20))
    throw new UsageError('--memory-budget must be a whole number of bytes, at least 1048576 (1 MiB)');
  return { maxWindowElements: n, memoryBudget: budget };
}

/**
 * Where windows were read twice for want of room: the --window-elements that would read more tensors
 * once within the same budget (readOnceWindowFor), or null where smaller windows would not.
 */
function smallerWindows(
  base: Model,
  recipe: Recipe,
  engine: MergeEngine,
  windows: WindowOptions,
): string | null {
  const sizes = mergeSizes([...base.tensors.values()].filter((t) => isMergeableDtype(t.dtype)));
  const inBytes = sizes.widestBytes;
  const budget = windows.memoryBudget ?? DEFAULT_MEMORY_BUDGET;
  const found = readOnceWindowFor(sizes.numels, windows.maxWindowElements ?? DEFAULT_WINDOW_ELEMENTS, {
    budget,
    driver: engine.driverMemory ?? { readAhead: 0, writeBehind: 0 },
    agents: engine.agents,
    inBytes,
    outBytes: recipe.outDtype ? dtypeBits(recipe.outDtype) / 8 : inBytes,
    tieRows: tieRowsPerAgent(methodOf(recipe.params.method).plan),
  });
  if (!found) return null;
  const but = found.twice === 0 ? '' : ` but the ${found.twice} largest`;
  return (
    `Within this budget, --window-elements ${found.window} would read every tensor here once${but}, ` +
    'in more windows (which on a CPU adapter such as SwiftShader cost more time than the reads they spare).'
  );
}

export async function analyze(values: Values): Promise<void> {
  if (!values.json) throw new UsageError('analyze needs --json OUT.json');
  const inputs = await loadInputs(values.base, values.model);
  await refuseOutputsOnInputs(
    [{ flag: '--json', path: values.json }],
    [inputs.basePath, ...inputs.modelPaths].flatMap((path, m) =>
      modelFilePaths(path, at([inputs.base, ...inputs.agents], m, 'models')),
    ),
  );
  // The statistics read ε, and write RAM+'s λ from r and α: their flags, RAM+'s defaults.
  const { epsilon, r, alpha } = paramsFromFlags(values, 'ramplus', inputs.agents.length);
  const problems = (['epsilon', 'r', 'alpha'] as const).flatMap((key) =>
    paramProblems(key, { epsilon, r, alpha }[key], inputs.agents.length),
  );
  if (problems.length) throw new UsageError(problems.join('; '));
  const readDtype = readDtypeFlag(values);
  const engine = await makeEngine(values.cpu, inputs.agents.length, windowElements(values));
  inputs.products.engine = engine;
  process.stderr.write(`Engine: ${engine.description}\n`);
  const progress = new ProgressPrinter(process.stderr);
  const cancel = cancellation();
  try {
    const job = {
      base: inputs.base,
      agents: inputs.agents,
      engine,
      epsilon,
      readDtype,
      signal: cancel.signal,
    };
    const analysis = await analyzeModels({ ...job, onProgress: (p) => progress.update(p) });
    progress.done();
    const labels = inputs.given.map((p) => basename(resolve(p)));
    const precision = await precisionSummary(job, analysis, labels);
    for (const line of precision?.lines ?? []) process.stderr.write(`${line}\n`);
    const json = statsJson(
      analysis,
      inputs.given,
      r,
      alpha,
      undefined,
      await statsFiles([inputs.base, ...inputs.agents]),
      precision,
    );
    await writeFile(values.json, `${JSON.stringify(json, null, 2)}\n`);
    process.stderr.write(`Wrote ${values.json}\n`);
  } finally {
    engine.destroy();
    cancel.dispose();
    exitSignal = cancel.received();
  }
}

function recipeFromFlags(values: Values, agents: number): MethodParams {
  const method = values.method;
  if (!method) throw new UsageError(`--method is required (one of ${METHODS.join(', ')})`);
  if (!isMethod(method)) throw new UsageError(`unknown --method ${method} (one of ${METHODS.join(', ')})`);
  return paramsFromFlags(values, method, agents);
}

export async function merge(values: Values): Promise<void> {
  const outDir = values.out;
  if (!outDir) throw new UsageError('merge needs --out DIR');
  if (values.config) {
    for (const flag of ['base', 'model', 'method'] as const)
      if (values[flag] !== undefined)
        throw new UsageError(`--config already names the models and method; drop --${flag}`);
    await runRecipeFile(values.config, outDir, (recipe, out, file) => runMerge(recipe, out, values, file));
    return;
  }
  const agents = values.model?.length ?? 0;
  const recipe: Recipe = {
    base: values.base ?? '',
    models: values.model ?? [],
    params: recipeFromFlags(values, Math.max(agents, 1)),
  };
  if (!recipe.base) throw new UsageError('--base PATH is required');
  await runMerge(recipe, outDir, values);
}

/**
 * One merge into `outDir`. `file` is the recipe file a recipe came from (its gradients and filters are
 * then resolved per tensor, and its problems are recipe errors); absent for the command-line flags.
 */
export async function runMerge(recipe: Recipe, outDir: string, values: Values, file?: string): Promise<void> {
  if (values.dtype !== undefined) {
    const dtype = DTYPE_FLAGS[values.dtype];
    if (!dtype) throw new UsageError(`--dtype must be bf16, f16 or f32, not ${values.dtype}`);
    recipe.outDtype = dtype;
  }
  // mergekit's `dtype` casts the inputs on load: a recipe's sets the read precision, the flag wins.
  const readDtype = readDtypeFlag(values) ?? recipe.mathDtype ?? undefined;
  // A linear recipe without a base (mergekit's form) takes its layout, config and tokenizer from the first model.
  const inputs = await loadInputs(recipe.base || recipe.models[0], recipe.models);
  const problems = validateParams(recipe.params, inputs.agents.length);
  if (problems.length) {
    if (file) throw new RecipeError(`${shorten(file)}: ${problems.join('; ')}`);
    throw new UsageError(problems.join('; '));
  }
  const perTensor = file ? recipeResolver(recipe, [...inputs.base.tensors.keys()], shorten(file)) : undefined;
  for (const note of recipe.notes ?? []) process.stderr.write(`Note: ${note}\n`);
  const shardBytes = num(values['shard-size'], 'shard-size');
  if (shardBytes !== undefined && !(shardBytes >= 1))
    throw new UsageError('--shard-size must be at least 1 byte');
  const windows = windowElements(values);
  const statsIn = values['stats-in'];
  if (values.adapter && (values.stats || statsIn !== undefined || values.dtype !== undefined))
    throw new UsageError(
      '--adapter writes LoRA factors in f32 and no statistics: drop --stats, --stats-in and --dtype',
    );
  if (values.adapter) adapterCoefficients(recipe.params);
  if (statsIn !== undefined) {
    if (methodOf(recipe.params.method).plan.lambdas !== 'global')
      throw new UsageError('--stats-in serves ramplus and ramplus_soft, whose λ come from the statistics');
    if (values.stats) throw new UsageError('--stats-in already holds the statistics; drop --stats');
  }
  // Reused only when they are of these very files: a merge with them reads each input once.
  const models = [inputs.base, ...inputs.agents];
  const names = [...inputs.base.tensors.keys()].filter((n) => inputs.agents.every((a) => a.tensors.has(n)));
  const analysis =
    statsIn === undefined
      ? undefined
      : totalsFromStatsJson(
          await readFile(statsIn, 'utf8'),
          statsIn,
          await statsFiles([inputs.base, ...inputs.agents]),
          recipe.params.epsilon,
          (gathered) => sameReads(models, names, readDtypeOf(gathered), readDtype),
        );
  // Preflight, before any weights are read: inputs as opened, --out claimed, free space and --stats.
  const labels = [inputs.basePath, ...inputs.given].map((p) => basename(resolve(p)));
  const files = [inputs.basePath, ...inputs.modelPaths].flatMap((path, m) =>
    modelFilePaths(path, at(models, m, 'models')).map((file) => ({ model: at(labels, m, 'labels'), file })),
  );
  await refuseOutputsOnInputs(
    [
      { flag: '--out', path: outDir, folder: true },
      ...(values.stats ? [{ flag: '--stats', path: values.stats }] : []),
    ],
    [
      ...files.map((f) => f.file),
      ...(statsIn === undefined ? [] : [statsIn]),
      ...(file === undefined ? [] : [file]),
    ],
  );
  const opened = await Promise.all(files.map((f) => fileIdentity(f.file)));
  const claim = await claimOutput(
    outDir,
    predictOutputBytes(inputs.base, inputs.agents, recipe.outDtype, shardBytes),
    values.stats,
    { statsBytes: predictStatsBytes(inputs.base, inputs.agents.length) },
  );
  let stage: RunStage = 'working';
  const controller = new AbortController();
  const signals = handleSignals(controller, () => stage, claim.discardSync, claim.out);
  let engine: MergeEngine | undefined;
  try {
    if (values.adapter) {
      // No engine: the factors are concatenated and scaled, never multiplied out.
      const written = await writeAdapterMerge({
        base: inputs.base,
        agents: inputs.agents,
        params: recipe.params,
        baseModel: resolve(inputs.basePath),
        out: nodeFolder(claim.staging),
      });
      await checkUnchanged(opened);
      if (controller.signal.aborted) throw abortError();
      stage = 'publishing';
      await claim.publish();
      stage = 'published';
      process.stderr.write(
        `Wrote the ${recipe.params.method} merge of ${inputs.agents.length} LoRA adapters as one adapter ` +
          `(${written.map((f) => f.file).join(', ')}) into ${outDir}\n`,
      );
      return;
    }
    engine = await makeEngine(values.cpu, inputs.agents.length, windows);
    inputs.products.engine = engine;
    process.stderr.write(`Engine: ${engine.description}\n`);
    const progress = new ProgressPrinter(process.stderr);
    const started = Date.now();
    // Hashed one file at a time beside the merge, for the model card.
    const hashing = (async (): Promise<InputFile[]> => {
      const hashed: InputFile[] = [];
      for (const [i, f] of files.entries())
        hashed.push({
          ...f,
          file: basename(f.file),
          bytes: at(opened, i, 'opened input files').size,
          sha256: await sha256File(f.file),
        });
      return hashed;
    })();
    hashing.catch(() => undefined);
    const result = await mergeModels({
      inputFiles: () => hashing,
      base: inputs.base,
      agents: inputs.agents,
      engine,
      params: recipe.params,
      analysis,
      readDtype,
      outDtype: recipe.outDtype,
      shardBytes,
      out: nodeFolder(claim.staging),
      baseLabel: at(labels, 0, 'labels'),
      agentLabels: labels.slice(1),
      // Full paths, so mergekit_config.yml runs as it is (mergekit takes a bare name for a Hub repo).
      recipe: {
        ...recipe,
        base: recipe.base && resolve(recipe.base),
        models: recipe.models.map(resolveModelRef),
      },
      perTensor,
      signal: controller.signal,
      onProgress: (p) => progress.update(p),
    });
    progress.done();
    if (values.stats) {
      const analysis =
        result.analysis ??
        (await analyzeModels({
          base: inputs.base,
          agents: inputs.agents,
          engine,
          epsilon: recipe.params.epsilon,
          readDtype,
          signal: controller.signal,
        }));
      const json = statsJson(analysis, inputs.given, recipe.params.r, recipe.params.alpha, {
        method: recipe.params.method,
        lambdas: result.lambdas,
      });
      await claim.writeStats(`${JSON.stringify(json, null, 2)}\n`);
    }
    await checkUnchanged(opened);
    // The last moment a cancel can take effect: past it, the model is published whole.
    if (controller.signal.aborted) throw abortError();
    stage = 'publishing';
    await claim.publish();
    stage = 'published';
    const seconds = (Date.now() - started) / 1000;
    process.stderr.write(
      `Merged ${result.mergedTensors} tensors (${result.copiedTensors} copied) with ${recipe.params.method} ` +
        `into ${outDir} in ${seconds.toFixed(1)} s; ${lambdaSummary(result)}; ` +
        `peak memory ${formatBytes(process.resourceUsage().maxRSS * 1024)}\n`,
    );
    const kept =
      engine.windowCache &&
      describeWindowCache(
        engine.windowCache,
        windows.memoryBudget ?? DEFAULT_MEMORY_BUDGET,
        formatBytes,
        (b) => `--memory-budget ${b} (${formatBytes(b)})`,
      );
    if (kept) process.stderr.write(`${kept}\n`);
    for (const warning of result.warnings) process.stderr.write(`Warning: ${escapeTerminal(warning)}\n`);
    if (engine.windowCache?.rereadBytes) {
      const smaller = smallerWindows(inputs.base, recipe, engine, windows);
      if (smaller) process.stderr.write(`${smaller}\n`);
    }
  } catch (error) {
    if (stage !== 'published') await claim.discard();
    // An input rewritten under the merge shows first as what its new bytes hold (NaN, a bad header):
    // the file changing is the cause, so that is what is said.
    if ((error as Error).name !== 'AbortError') await checkUnchanged(opened);
    throw error;
  } finally {
    engine?.destroy();
    signals.dispose();
    exitSignal = signals.signal();
  }
}

/** The signal that cancelled the last run, for its exit status. */
export let exitSignal: string | undefined;
