// Which folder of a set (a folder holding a base folder and agent folders) is the base: a folder named
// base, else the folder the others' configs and model cards say they were fine-tuned from, else the
// one plain model among adapters. Anything less than one clear answer is a question for the user.
import { at } from '../io/checked.ts';

/** What a set's folder says about itself, read from its small files (no weights). */
export interface SetMember {
  /** The folder's name. */
  label: string;
  /** config.json, parsed; null where there is none or it is not a JSON object. */
  config: Record<string, unknown> | null;
  /** adapter_config.json (a PEFT adapter), parsed; null where there is none. */
  adapterConfig: Record<string, unknown> | null;
  /** The `base_model` entries of README.md's front matter (a Hugging Face model card). */
  cardBaseModels: string[];
  hasWeights: boolean;
}

export type SetReading =
  | { kind: 'set'; base: string; agents: string[]; why: string }
  /** Several folders could be the base (or none says): the user picks among `candidates`. */
  | { kind: 'ask'; candidates: string[]; why: string };

const NAMED_BASE = /^base(?:[-_. ]?model)?$/i;

/** The last segment of a model reference (a hub id, a path, a path ending in '/'). */
function lastSegment(reference: string): string {
  const parts = reference.trim().replace(/\\/g, '/').replace(/\/+$/, '').split('/');
  return parts[parts.length - 1] ?? '';
}

/** The references to other models a folder's files hold, where it says it was made from. */
export function references(member: SetMember): string[] {
  const found: string[] = [];
  const add = (value: unknown): void => {
    if (typeof value === 'string' && value.trim() !== '') found.push(value);
  };
  add(member.config?._name_or_path);
  add(member.adapterConfig?.base_model_name_or_path);
  member.cardBaseModels.forEach(add);
  return found;
}

/** The other members a folder names as where it came from (never itself: a saved model names its own path). */
export function parentsOf(member: SetMember, members: readonly SetMember[]): string[] {
  const parents = new Set<string>();
  for (const reference of references(member)) {
    const name = lastSegment(reference);
    const exact = members.find((m) => m.label === name);
    const match = exact ?? members.find((m) => m.label.toLowerCase() === name.toLowerCase());
    if (match && match.label !== member.label) parents.add(match.label);
  }
  return [...parents];
}

const listed = (labels: readonly string[]): string => labels.join(', ');

function chosen(members: readonly SetMember[], base: string, why: string): SetReading {
  return { kind: 'set', base, agents: members.map((m) => m.label).filter((l) => l !== base), why };
}

/** The base of a set, or the question to ask where its folders do not settle it. */
export function readSet(members: readonly SetMember[]): SetReading {
  const named = members.filter((m) => NAMED_BASE.test(m.label)).map((m) => m.label);
  // Lineage: the folders some other folder names as its origin, and of those the ones that name none.
  const parents = new Map(members.map((m) => [m.label, parentsOf(m, members)]));
  const origins = [...new Set([...parents.values()].flat())];
  const roots = origins.filter((p) => (parents.get(p) ?? []).length === 0);
  const lineage = roots.length === 1 ? at(roots, 0) : null;
  const children = (label: string): string[] =>
    members.filter((m) => parents.get(m.label)?.includes(label)).map((m) => m.label);

  if (named.length > 1)
    return { kind: 'ask', candidates: named, why: `${listed(named)} are all named like a base` };
  if (named.length === 1) {
    const base = at(named, 0);
    if (lineage !== null && lineage !== base)
      return {
        kind: 'ask',
        candidates: [base, lineage],
        why: `${base} is named like a base, but ${listed(children(lineage))} say they were made from ${lineage}`,
      };
    return chosen(members, base, `the folder is named ${base}`);
  }
  if (lineage !== null)
    return chosen(
      members,
      lineage,
      `${listed(children(lineage))} say they were made from ${lineage} (config.json, adapter_config.json or model card)`,
    );
  if (origins.length > 1)
    return {
      kind: 'ask',
      candidates: origins,
      why: `the folders name different origins: ${listed(origins)}`,
    };
  // A PEFT adapter is never a base: one plain model among adapters is theirs.
  const plain = members.filter((m) => m.adapterConfig === null);
  const [only] = plain;
  if (only && plain.length === 1 && members.length > 1)
    return chosen(members, only.label, `the others are adapters, ${only.label} is the one full model`);
  const candidates = (plain.length > 0 ? plain : members).filter((m) => m.hasWeights).map((m) => m.label);
  return {
    kind: 'ask',
    candidates: candidates.length > 0 ? candidates : members.map((m) => m.label),
    why: 'no folder is named base and no config or model card says which one the others came from',
  };
}

/** The `base_model` entries of a model card's YAML front matter (a value or a list of values). */
export function cardBaseModels(readme: string): string[] {
  const match = /^---\r?\n([\s\S]*?)\r?\n---/.exec(readme);
  if (!match) return [];
  const lines = (match[1] ?? '').split(/\r?\n/);
  const unquote = (value: string): string => value.trim().replace(/^['"]|['"]$/g, '');
  const start = lines.findIndex((l) => /^base_model:/.test(l));
  if (start < 0) return [];
  const inline = unquote(at(lines, start).slice('base_model:'.length));
  if (inline.startsWith('[') && inline.endsWith(']'))
    return inline
      .slice(1, -1)
      .split(',')
      .map(unquote)
      .filter((v) => v !== '');
  if (inline !== '') return [inline];
  const list: string[] = [];
  for (const line of lines.slice(start + 1)) {
    const item = /^\s*-\s*(.+)$/.exec(line);
    if (!item) break;
    list.push(unquote(item[1] ?? ''));
  }
  return list;
}

/** A JSON object from a file's text; null for anything else (a set's reading never throws on it). */
export function jsonObject(text: string | null): Record<string, unknown> | null {
  if (text === null) return null;
  try {
    const value: unknown = JSON.parse(text);
    return typeof value === 'object' && value !== null && !Array.isArray(value)
      ? (value as Record<string, unknown>)
      : null;
  } catch {
    return null;
  }
}
