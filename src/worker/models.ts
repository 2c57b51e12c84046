// The models the engine worker holds, by slot: opening them from Blobs or the app's own URLs, a PEFT
// LoRA adapter as an agent over the base slot's model (other adapter types, and an adapter as the
// base, refused with one message), the files' snapshots checked again before a merge is kept, and
// the statistics of the last analysis, which serve later merges of the same models.
import { StageClock, timedSource } from '../io/timed.ts';
import { summarizeModel, type ModelSummary } from '../driver/model-transfer.ts';
import { openModel, type Model } from '../format/model.ts';
import { ADAPTER_CONFIG, adapterMessage, detectAdapter, type PeftAdapter } from '../format/peft.ts';
import { openAdapterAgent } from '../driver/adapter-model.ts';
import { currentProduct } from './engines.ts';
import { blobSource, directoryHandleFiles, fileSnapshot, type FileSnapshot } from '../io/browser.ts';
import { SafetensorsError } from '../io/errors.ts';
import type { ModelFile } from '../io/source.ts';
import { must } from '../io/checked.ts';
import { sampleDerivation, type DerivationSample } from '../driver/derivation.ts';
import type { AnalysisResult } from '../driver/job.ts';
import type { ReadDtype } from '../format/precision.ts';
import { refusal } from './errors.ts';
import type { ArenaTarget, FileRef } from './protocol.ts';
import { mergesRoot } from './storage.ts';

const models = new Map<string, Model>();
/** Slots that hold a LoRA adapter: its files and what it is; its agent Model is made over a base. */
const adapters = new Map<string, { label: string; files: ModelFile[]; info: PeftAdapter }>();
/** Per adapter slot: its agent over the base it was last made over (a new base makes it again). */
const adapterAgents = new Map<string, { base: Model; agent: Promise<Model> }>();
// The newest open per slot: an older open that finishes later must not replace the newer model.
const opening = new Map<string, number>();
let nextOpen = 1;
// Per loaded slot: its files as they were when opened, checked again before a merge is kept.
const snapshots = new Map<string, FileSnapshot[]>();
let cachedAnalysis: { key: string; result: AnalysisResult } | null = null;
// Per agent: its lineage sample and the base it was taken against. Models never change once opened
// (a new choice is a new Model), so a check after one more agent arrives reads only that agent's.
const samples = new WeakMap<Model, { base: Model; sample: DerivationSample }>();
/** Every read of a loaded model's files so far: wall time summed over reads, and bytes. */
const reads = new StageClock();

// The e2e tests' read gate: reads pass while readsLeft > 0, then wait until the gate opens. A test
// that must act while a job runs (cancel, reload, rewrite an input) holds the gate, acts, then opens
// it: the job is mid-way by construction, however loaded the machine, never by a delay that guesses.
let readsLeft = Infinity;
let gate: { opened: Promise<void>; open: () => void } | null = null;

/**
 * e2e only: `after` more reads pass, then every read waits until `holdReads(null)` opens the gate
 * (which lets the waiting reads go on).
 */
export function holdReads(after: number | null): void {
  gate?.open();
  gate = null;
  readsLeft = Infinity;
  if (after === null) return;
  let open = (): void => undefined;
  const opened = new Promise<void>((resolve) => (open = resolve));
  gate = { opened, open };
  readsLeft = Math.max(0, after);
}

/** The read totals so far; a job's share is the difference of two snapshots. */
export function readTotals(): { ms: number; bytes: number } {
  return { ms: reads.ms, bytes: reads.bytes };
}

/** Waits at the tests' read gate when it is held (holdReads), outside the timed read. */
async function testGate(): Promise<void> {
  if (readsLeft > 0) {
    readsLeft -= 1;
    return;
  }
  await gate?.opened;
}

async function modelFiles(
  files: FileRef[],
  fetchOwn: (url: string) => Promise<Response>,
): Promise<{ name: string; blob: Blob }[]> {
  return Promise.all(
    files.map(async (ref) => {
      let blob: Blob;
      if ('blob' in ref) blob = ref.blob;
      else {
        const response = await fetchOwn(ref.url);
        if (!response.ok)
          throw new SafetensorsError(
            'ReadFailed',
            ref.name,
            `fetching ${ref.url} answered ${response.status}.`,
          );
        blob = await response.blob();
      }
      return { name: ref.name, blob };
    }),
  );
}

/** A PEFT adapter picked as a model: one error that says what it is and what to load instead. */
function adapterRefusal(message: string, file: string): Error {
  const error = refusal('PeftAdapter', message);
  return Object.assign(error, { file });
}

/** The adapter_config.json of a model's files, as text, or null. */
async function adapterConfig(files: ModelFile[]): Promise<{ text: string } | null> {
  const configFile = files.find((f) => f.name === ADAPTER_CONFIG);
  if (!configFile) return null;
  return {
    text: new TextDecoder().decode(
      await configFile.source.read(0, Math.min(configFile.source.size, 1 << 20)),
    ),
  };
}

/** What was opened into a slot: a model, or a LoRA adapter (its weights, and what it is). */
type Opened = { model: Model; adapter?: undefined } | { model: Model; adapter: PeftAdapter };

/**
 * Opens a model; a PEFT LoRA adapter (by adapter_config.json or tensor names) picked as an agent
 * opens as its weights and what it is, every other adapter is refused with what to load instead.
 */
async function openAdapterAware(label: string, files: ModelFile[], role: 'base' | 'agent'): Promise<Opened> {
  const config = await adapterConfig(files);
  let opened: Model;
  try {
    opened = await openModel(
      label,
      files.filter((f) => f.name !== ADAPTER_CONFIG),
    );
  } catch (error) {
    // An adapter folder often holds several checkpoints' weights: the config alone says what it is.
    const adapter = config ? detectAdapter(config, []) : null;
    if (adapter)
      throw adapterRefusal(adapterMessage(adapter, label, role, (error as Error).message), ADAPTER_CONFIG);
    throw error;
  }
  const weights = opened.shards[0]?.file;
  const adapter = detectAdapter(config, [...opened.tensors.values()], weights);
  if (!adapter) return { model: opened };
  // The agent is made from the config (driver/adapter-model.ts): LoRA weights alone are refused.
  if (adapter.type !== 'LORA' || role === 'base' || !config)
    throw adapterRefusal(
      adapterMessage(adapter, label, role, config ? undefined : `no ${ADAPTER_CONFIG} is among its files`),
      adapter.evidence,
    );
  return { model: opened, adapter };
}

type AdapterSlot = { label: string; files: ModelFile[]; info: PeftAdapter };

/** A LoRA adapter's agent over `base` (its reads materialise s·B·A), or its refusal where it does not fit. */
function makeAdapterAgent(adapter: AdapterSlot, base: Model): Promise<Model> {
  return openAdapterAgent(adapter.label, adapter.files, base, { product: currentProduct }).catch(
    (error: unknown) => {
      throw adapterRefusal(
        `${adapter.label} is a PEFT LoRA adapter (${adapterFacts(adapter.info)}) that does not fit the base ` +
          `${base.name}: ${(error as Error).message}. Load ${adapter.info.baseModel ?? 'the model it was trained on'} ` +
          'as the base.',
        ADAPTER_CONFIG,
      );
    },
  );
}

/** The agent a LoRA adapter slot is over `base`, made once per base. */
function adapterAgent(slot: string, base: Model): Promise<Model> {
  const found = adapterAgents.get(slot);
  if (found?.base === base) return found.agent;
  const adapter = adapters.get(slot);
  if (!adapter) throw new Error(`Slot ${slot} holds no adapter.`);
  const agent = makeAdapterAgent(adapter, base);
  agent.catch(() => {
    if (adapterAgents.get(slot)?.agent === agent) adapterAgents.delete(slot);
  });
  adapterAgents.set(slot, { base, agent });
  return agent;
}

function adapterFacts(adapter: PeftAdapter): string {
  return [
    adapter.rank !== null ? `rank ${adapter.rank}` : null,
    adapter.alpha !== null ? `alpha ${adapter.alpha}` : null,
    adapter.targets.length > 0 ? `targets ${adapter.targets.join(', ')}` : null,
  ]
    .filter((f): f is string => f !== null)
    .join('; ');
}

/** The agents of these slots over `base`: a LoRA adapter slot's agent made over it, any other as opened. */
export function agentModels(base: Model, slots: readonly string[]): Promise<Model[]> {
  return Promise.all(slots.map((slot) => (adapters.has(slot) ? adapterAgent(slot, base) : model(slot))));
}

/** Per LoRA adapter slot among `slots`: its notes over `base` (a base_model_name_or_path that differs). */
export async function adapterNotes(base: Model, slots: readonly string[]): Promise<Record<string, string[]>> {
  const notes: Record<string, string[]> = {};
  for (const slot of slots)
    if (adapters.has(slot)) notes[slot] = [...(await adapterAgent(slot, base)).warnings];
  return notes;
}

/** Opens a model into a slot, replacing what it held; an open overtaken by a newer one is refused. */
export async function openSlot(
  slot: string,
  label: string,
  files: FileRef[],
  fetchOwn: (url: string) => Promise<Response>,
): Promise<ModelSummary> {
  const mine = nextOpen++;
  opening.set(slot, mine);
  forget(slot);
  const blobs = await modelFiles(files, fetchOwn);
  const opens = blobs.map(({ name, blob }) => ({
    name,
    source: timedSource(blobSource(blob, name), reads, testGate),
  }));
  const opened = await openAdapterAware(label, opens, slot === 'base' ? 'base' : 'agent');
  const adapter = opened.adapter && { label, files: opens, info: opened.adapter };
  // Over a base already loaded it must fit now: refused on its own card rather than at the check.
  const base = models.get('base');
  const agent = adapter && base ? makeAdapterAgent(adapter, base) : undefined;
  if (agent) await agent;
  if (opening.get(slot) !== mine)
    throw refusal('AbortError', `${label} was replaced by a newer choice for the same place.`);
  models.set(slot, opened.model);
  if (adapter) adapters.set(slot, adapter);
  if (agent && base) adapterAgents.set(slot, { base, agent });
  snapshots.set(
    slot,
    blobs.map(({ name, blob }) => fileSnapshot(name, blob)),
  );
  return { ...summarizeModel(opened.model), ...(opened.adapter ? { adapter: opened.adapter } : {}) };
}

/** Drops a slot's model; the cached analysis may have been of it, so it goes too. */
function forget(slot: string): void {
  models.delete(slot);
  adapters.delete(slot);
  adapterAgents.delete(slot);
  snapshots.delete(slot);
  cachedAnalysis = null;
}

export function closeSlot(slot: string): void {
  opening.delete(slot);
  forget(slot);
}

/**
 * Exchanges the models of two slots (Make base). An open still in flight for either is refused when
 * it lands: it was chosen for the other place.
 */
export function swapSlots(a: string, b: string): void {
  opening.delete(a);
  opening.delete(b);
  for (const map of [models, snapshots] as Map<string, unknown>[]) {
    const [x, y] = [map.get(a), map.get(b)];
    if (y === undefined) map.delete(a);
    else map.set(a, y);
    if (x === undefined) map.delete(b);
    else map.set(b, x);
  }
  cachedAnalysis = null;
}

export function model(slot: string): Model {
  const found = models.get(slot);
  if (!found) throw new Error(`No model is loaded in slot ${slot}; load it again.`);
  return found;
}

/** The slot's files as they were when it was opened (none for a slot not loaded). */
export function snapshot(slot: string): FileSnapshot[] {
  return snapshots.get(slot) ?? [];
}

function analysisKey(
  base: string,
  agents: string[],
  epsilon: number,
  readDtype: ReadDtype | undefined,
): string {
  return JSON.stringify([base, agents, epsilon, readDtype ?? 'default']);
}

export function rememberAnalysis(
  base: string,
  agents: string[],
  epsilon: number,
  readDtype: ReadDtype | undefined,
  result: AnalysisResult,
): void {
  cachedAnalysis = { key: analysisKey(base, agents, epsilon, readDtype), result };
}

/** The last analysis, if it was of these models at this ε and read precision. */
export function recalledAnalysis(
  base: string,
  agents: string[],
  epsilon: number,
  readDtype: ReadDtype | undefined,
): AnalysisResult | undefined {
  return cachedAnalysis?.key === analysisKey(base, agents, epsilon, readDtype)
    ? cachedAnalysis.result
    : undefined;
}

/** The agent's lineage sample against the base, taken once per pair of opened models. */
export async function derivationSample(
  base: Model,
  agent: Model,
  signal?: AbortSignal,
): Promise<DerivationSample> {
  const known = samples.get(agent);
  if (known?.base === base) return known.sample;
  const sample = await sampleDerivation(base, agent, { signal });
  samples.set(agent, { base, sample });
  return sample;
}

/** A loaded model, a merge in OPFS, or a merge in a picked folder. */
export async function openTarget(target: ArenaTarget): Promise<Model> {
  if ('slot' in target)
    return adapters.has(target.slot)
      ? must((await agentModels(model('base'), [target.slot]))[0], target.slot)
      : model(target.slot);
  if ('handle' in target) return openModel(target.handle.name, await directoryHandleFiles(target.handle));
  const dir = await (await mergesRoot()).getDirectoryHandle(target.folder);
  return openModel(target.folder, await directoryHandleFiles(dir));
}
