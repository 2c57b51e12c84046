// Loading what the folder helpers (io/browser-folders.ts) walked: picks go into the slot they were
// chosen for, picked folders are kept for a reload, and kept folders are reopened from a click.
import type { ModelRole } from '../../state/studio-slice.ts';
import { studioStore } from '../../state/store.ts';
import { readHandle, type PickedModel } from '../../io/browser-folders.ts';
import { keepFolders, requestRead, type KeptFolder } from '../../io/handle-store.ts';

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
    for (const model of store.studio.models.filter((m) => m.role === 'agent'))
      await store.removeAgent(model.slot);
    await store.loadAgents(agents);
  }
  return refused;
}

/** Loads picks where they were chosen: the first into the base or agent slot, any others as new agents. */
export function loadPicks(role: ModelRole, slot: string | null, picks: PickedModel[]): void {
  const store = studioStore.getState();
  if (picks.length === 0) return;
  // Only the first pick takes the base's place; any others become agents.
  const kept = picks.flatMap((p, i) =>
    p.handle ? [{ label: p.label, role: i === 0 ? role : ('agent' as const), handle: p.handle }] : [],
  );
  keepFolders(kept).catch(() => undefined);
  if (role === 'agent' && slot === null) {
    void store.loadAgents(picks);
    return;
  }
  const [first, ...rest] = picks;
  if (!first) return;
  void store.loadFiles(role, slot, first.label, first.files);
  if (rest.length > 0) void store.loadAgents(rest);
}
