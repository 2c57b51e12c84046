// Loading what the folder helpers (io/browser-folders.ts) walked: picks go into the slot they were
// chosen for, a set given to the base opens whole (its base found by format/model-set.ts, or asked
// for), picked folders are kept for a reload, kept folders are reopened from a click, and names
// given to models are remembered for the next time their folders are picked.
import { create } from 'zustand';
import type { ModelRole, StudioModel } from '../../state/studio-slice.ts';
import { studioStore } from '../../state/store.ts';
import { cardBaseModels, jsonObject, readSet, type SetMember } from '../../format/model-set.ts';
import { readHandle, type PickedModel } from '../../io/browser-folders.ts';
import { keepFolders, rekeepFolder, requestRead, type KeptFolder } from '../../io/handle-store.ts';

/** A set whose base the folders do not settle: the user picks it among `candidates`. */
export interface SetQuestion {
  set: string;
  picks: PickedModel[];
  candidates: string[];
  why: string;
}

/** The set last opened, and what made its base the base. */
export interface OpenedSet {
  set: string;
  /** The base's origin (see originOf): the note holds only while that model is the base. */
  base: string;
  agents: number;
  why: string;
}

/** The open question and the last set opened (page-only state: a question holds the picked files). */
export const useSetStatus = create<{ question: SetQuestion | null; opened: OpenedSet | null }>(() => ({
  question: null,
  opened: null,
}));

const NAMES_KEY = 'merge-studio.model-names.v1';
const MAX_NAMES = 256;

/** Where a pick came from: its folder, within its set's where it was one of a set. */
export function originOf(pick: PickedModel): string {
  return pick.set ? `${pick.set}/${pick.label}` : pick.label;
}

function savedNames(): Record<string, string> {
  try {
    const value: unknown = JSON.parse(localStorage.getItem(NAMES_KEY) ?? '{}');
    return typeof value === 'object' && value !== null ? (value as Record<string, string>) : {};
  } catch {
    return {};
  }
}

/** The name the user gave this folder's model before, else the folder's name. */
export function nameFor(pick: PickedModel): string {
  const name = savedNames()[originOf(pick)];
  return typeof name === 'string' && name !== '' ? name : pick.label;
}

/**
 * After a rename: the name is remembered for the model's folder (the next pick of it, after a reload
 * too, gets it) and a folder kept for reopening is kept under it.
 */
export function renamed(model: StudioModel, previous: string): void {
  const origin = model.origin ?? previous;
  const names = savedNames();
  delete names[origin];
  if (model.label !== origin.split('/').pop()) names[origin] = model.label;
  const kept = Object.entries(names).slice(-MAX_NAMES);
  try {
    localStorage.setItem(NAMES_KEY, JSON.stringify(Object.fromEntries(kept)));
  } catch {
    // Storage full or disabled: the folder's own name comes back after a reload.
  }
  rekeepFolder(previous, model.label).catch(() => undefined);
}

/**
 * Reopens kept folders after a reload (from a click, for the permission prompt): a kept base takes
 * the base's place, kept agents replace the agents, in the order given. Returns the labels refused.
 */
export async function reopenFolders(folders: readonly KeptFolder[]): Promise<string[]> {
  const refused: string[] = [];
  const opened: PickedModel[] = [];
  const roles: ModelRole[] = [];
  for (const folder of folders) {
    if (!(await requestRead(folder.handle))) {
      refused.push(folder.label);
      continue;
    }
    opened.push({ label: folder.label, files: (await readHandle(folder.handle)).files });
    roles.push(folder.role);
  }
  const store = studioStore.getState();
  const base = opened.find((_, i) => roles[i] === 'base');
  const agents = opened.filter((_, i) => roles[i] === 'agent');
  if (base) void store.loadFiles('base', null, base.label, base.files);
  if (agents.length > 0) {
    // All at once: removed one by one, each removal checked the agents left, a wait for nothing.
    await Promise.all(
      store.studio.models.filter((m) => m.role === 'agent').map((m) => store.removeAgent(m.slot)),
    );
    await store.loadAgents(agents);
  }
  return refused;
}

/** The text of a pick's file (its first `limit` bytes), or null where it has none of that name. */
async function textOf(pick: PickedModel, name: string, limit = 1 << 20): Promise<string | null> {
  const file = pick.files.find((f) => f.name === name);
  return file ? file.blob.slice(0, limit).text() : null;
}

/** What a set's folder says about itself, from its config, adapter config and model card. */
async function setMember(pick: PickedModel): Promise<SetMember> {
  const [config, adapter, readme] = await Promise.all([
    textOf(pick, 'config.json'),
    textOf(pick, 'adapter_config.json'),
    textOf(pick, 'README.md', 64 << 10),
  ]);
  return {
    label: pick.label,
    config: jsonObject(config),
    adapterConfig: jsonObject(adapter),
    cardBaseModels: readme === null ? [] : cardBaseModels(readme),
    hasWeights: pick.files.some((f) => f.name.endsWith('.safetensors')),
  };
}

const agentPick = (p: PickedModel) => ({ label: nameFor(p), files: p.files, origin: originOf(p) });

/** Opens a whole set: its base into the base's place, every other folder as an agent, nothing else kept. */
async function openSet(set: string, picks: PickedModel[], base: string, why: string): Promise<void> {
  const basePick = picks.find((p) => p.label === base);
  if (!basePick) return;
  const agents = picks.filter((p) => p !== basePick);
  useSetStatus.setState({
    question: null,
    opened: { set, base: originOf(basePick), agents: agents.length, why },
  });
  const kept = picks.flatMap((p) =>
    p.handle
      ? [
          {
            label: nameFor(p),
            role: p === basePick ? ('base' as const) : ('agent' as const),
            handle: p.handle,
          },
        ]
      : [],
  );
  keepFolders(kept).catch(() => undefined);
  const store = studioStore.getState();
  await store.startEmpty();
  void store.loadFiles('base', null, nameFor(basePick), basePick.files, originOf(basePick));
  await store.loadAgents(agents.map(agentPick));
}

/** Reads a set's folders and opens it, or asks which folder is the base where they do not say. */
async function openPickedSet(picks: PickedModel[]): Promise<void> {
  const set = picks[0]?.set ?? 'the dropped folders';
  const reading = readSet(await Promise.all(picks.map(setMember)));
  if (reading.kind === 'ask') {
    useSetStatus.setState({
      question: { set, picks, candidates: reading.candidates, why: reading.why },
      opened: null,
    });
    return;
  }
  await openSet(set, picks, reading.base, reading.why);
}

/** The answer to the open question: the folder to make the base, or null to open nothing. */
export async function answerSetQuestion(base: string | null): Promise<void> {
  const question = useSetStatus.getState().question;
  useSetStatus.setState({ question: null });
  if (!question || base === null) return;
  await openSet(question.set, question.picks, base, `you chose ${base}`);
}

/**
 * Loads picks where they were chosen: several given to the base are a set (opened whole); otherwise
 * the first goes into the base or agent slot and any others become new agents.
 */
export function loadPicks(role: ModelRole, slot: string | null, picks: PickedModel[]): void {
  const store = studioStore.getState();
  if (picks.length === 0) return;
  if (role === 'base' && picks.length > 1) {
    void openPickedSet(picks);
    return;
  }
  // Only the first pick takes the base's place; any others become agents.
  const kept = picks.flatMap((p, i) =>
    p.handle ? [{ label: nameFor(p), role: i === 0 ? role : ('agent' as const), handle: p.handle }] : [],
  );
  keepFolders(kept).catch(() => undefined);
  if (role === 'agent' && slot === null) {
    void store.loadAgents(picks.map(agentPick));
    return;
  }
  const [first, ...rest] = picks;
  if (!first) return;
  void store.loadFiles(role, slot, nameFor(first), first.files, originOf(first));
  if (rest.length > 0) void store.loadAgents(rest.map(agentPick));
}
