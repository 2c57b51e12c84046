// Probe files: JSONL, one {"prompt", "completion", "set"?} object a line (SPEC.md "Evaluation").
// A probe file is written by hand, so every error names the file, the line and what is wrong with
// it; nothing here reads files (the CLI and the worker hand over the text).

import type { Probe } from './types.ts';

/** The set a line without "set" belongs to: the file's name without folder and extension. */
export function defaultSetName(fileName: string): string {
  const base = fileName.slice(Math.max(fileName.lastIndexOf('/'), fileName.lastIndexOf('\\')) + 1);
  const dot = base.lastIndexOf('.');
  return dot > 0 ? base.slice(0, dot) : base;
}

/** The probes of one JSONL file, in file order. Blank lines are skipped; anything else must parse. */
export function parseProbes(text: string, fileName: string): Probe[] {
  const fallbackSet = defaultSetName(fileName);
  const probes: Probe[] = [];
  // A byte-order mark is how some editors start a UTF-8 file; it is not part of line 1's JSON.
  const lines = text.replace(/^\uFEFF/, '').split(/\r?\n/);
  lines.forEach((line, index) => {
    if (line.trim() === '') return;
    const where = `${fileName}:${index + 1}`;
    let value: unknown;
    try {
      value = JSON.parse(line);
    } catch (error) {
      throw new Error(`${where}: not valid JSON (${(error as Error).message})`, { cause: error });
    }
    if (typeof value !== 'object' || value === null || Array.isArray(value))
      throw new Error(
        `${where}: expected an object {"prompt", "completion", "set"?}, got ${describe(value)}`,
      );
    const fields = value as Record<string, unknown>;
    const prompt = stringField(fields, 'prompt', where);
    const completion = stringField(fields, 'completion', where);
    // An empty completion has no token to score: its nll and top-1 would be silently 0.
    if (completion === '') throw new Error(`${where}: "completion" is empty: there is nothing to score`);
    let set = fallbackSet;
    if (fields.set !== undefined) {
      set = stringField(fields, 'set', where);
      if (set.trim() === '') throw new Error(`${where}: "set" is empty: leave it out for the file's set`);
    }
    probes.push({ prompt, completion, set });
  });
  if (probes.length === 0) throw new Error(`${fileName}: no probes (one JSON object a line expected)`);
  return probes;
}

function stringField(fields: Record<string, unknown>, key: string, where: string): string {
  const value = fields[key];
  if (value === undefined) throw new Error(`${where}: "${key}" is missing`);
  if (typeof value !== 'string')
    throw new Error(`${where}: "${key}" must be a string, got ${describe(value)}`);
  return value;
}

function describe(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'an array';
  return typeof value === 'object' ? 'an object' : `a ${typeof value}`;
}
