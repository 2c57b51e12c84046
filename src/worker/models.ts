// The models the engine worker holds, by slot: opening them from Blobs or the app's own URLs (PEFT
// adapters refused with one message), the files' snapshots checked again before a merge is kept,
// and the statistics of the last analysis, which serve later merges of the same models.
import { StageClock, timedSource } from '../io/timed.ts';
import { summarizeModel, type ModelSummary } from '../driver/model-transfer.ts';
import { openModel, type Model } from '../format/model.ts';
import { ADAPTER_CONFIG, adapterMessage, detectAdapter } from '../format/peft.ts';
import { blobSource, directoryHandleFiles, fileSnapshot, type FileSnapshot } from '../io/browser.ts';
import { SafetensorsError } from '../io/errors.ts';
import type { ModelFile } from '../io/source.ts';
import { sampleDerivation, type DerivationSample } from '../driver/derivation.ts';
import type { AnalysisResult } from '../driver/job.ts';
import { refusal } from './errors.ts';
import type { ArenaTarget, FileRef } from './protocol.ts';
import { mergesRoot } from './storage.ts';

const models = new Map<string, Model>();
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

/** Opens a model, unless its files are a PEFT adapter (by adapter_config.json or tensor names). */
async function openAdapterAware(label: string, files: ModelFile[]): Promise<Model> {
  const configFile = files.find((f) => f.name === ADAPTER_CONFIG);
  const config = configFile
    ? {
        text: new TextDecoder().decode(
          await configFile.source.read(0, Math.min(configFile.source.size, 1 << 20)),
        ),
      }
    : null;
  let opened: Model;
  try {
    opened = await openModel(label, files);
  } catch (error) {
    // An adapter folder often holds several checkpoints' weights: the config alone says what it is.
    const adapter = config ? detectAdapter(config, []) : null;
    if (adapter) throw adapterRefusal(adapterMessage(adapter, label), ADAPTER_CONFIG);
    throw error;
  }
  const weights = opened.shards[0]?.file;
  const adapter = detectAdapter(config, [...opened.tensors.values()], weights);
  if (adapter) throw adapterRefusal(adapterMessage(adapter, label), adapter.evidence);
  return opened;
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
  const opened = await openAdapterAware(
    label,
    blobs.map(({ name, blob }) => ({ name, source: timedSource(blobSource(blob, name), reads, testGate) })),
  );
  if (opening.get(slot) !== mine)
    throw refusal('AbortError', `${label} was replaced by a newer choice for the same place.`);
  models.set(slot, opened);
  snapshots.set(
    slot,
    blobs.map(({ name, blob }) => fileSnapshot(name, blob)),
  );
  return summarizeModel(opened);
}

/** Drops a slot's model; the cached analysis may have been of it, so it goes too. */
function forget(slot: string): void {
  models.delete(slot);
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

function analysisKey(base: string, agents: string[], epsilon: number): string {
  return JSON.stringify([base, agents, epsilon]);
}

export function rememberAnalysis(
  base: string,
  agents: string[],
  epsilon: number,
  result: AnalysisResult,
): void {
  cachedAnalysis = { key: analysisKey(base, agents, epsilon), result };
}

/** The last analysis, if it was of these models at this ε. */
export function recalledAnalysis(
  base: string,
  agents: string[],
  epsilon: number,
): AnalysisResult | undefined {
  return cachedAnalysis?.key === analysisKey(base, agents, epsilon) ? cachedAnalysis.result : undefined;
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
  if ('slot' in target) return model(target.slot);
  if ('handle' in target) return openModel(target.handle.name, await directoryHandleFiles(target.handle));
  const dir = await (await mergesRoot()).getDirectoryHandle(target.folder);
  return openModel(target.folder, await directoryHandleFiles(dir));
}
