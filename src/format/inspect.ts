// Summarises an opened model for the UI and the CLI's `inspect`: files, tensors, sizes, parameter
// counts per dtype and the config facts that matter for a merge.

import { at } from '../io/checked.ts';
import type { Dtype } from './dtype.ts';
import type { Model } from './model.ts';
import { numel } from './safetensors.ts';

export interface InspectReport {
  name: string;
  sharded: boolean;
  files: { file: string; bytes: number; tensors: number }[];
  tensors: { name: string; dtype: Dtype; shape: number[]; file: string; bytes: number }[];
  /** Sum of tensor bytes (headers excluded). */
  totalBytes: number;
  /** Total elements over all tensors. */
  parameters: number;
  /** Elements per dtype (they sum to `parameters`). */
  dtypes: Record<string, number>;
  config?: {
    modelType?: string;
    architectures?: string[];
    hiddenSize?: number;
    layers?: number;
    vocabSize?: number;
    torchDtype?: string;
  };
  warnings: string[];
}

export function inspectModel(model: Model): InspectReport {
  const tensors: InspectReport['tensors'] = [];
  for (const t of model.tensors.values())
    tensors.push({ name: t.name, dtype: t.dtype, shape: [...t.shape], file: t.file, bytes: t.end - t.begin });
  const { name, sharded, files, ...rest } = modelFacts(model);
  return { name, sharded, files, tensors, ...rest };
}

/** The report without its tensor list: what a summary of the model needs besides one row per tensor. */
export function modelFacts(model: Model): Omit<InspectReport, 'tensors'> {
  const dtypes: Record<string, number> = {};
  let parameters = 0;
  for (const t of model.tensors.values()) {
    const elements = numel(t.shape);
    parameters += elements;
    dtypes[t.dtype] = (dtypes[t.dtype] ?? 0) + elements;
  }
  const facts: Omit<InspectReport, 'tensors'> = {
    name: model.name,
    sharded: model.sharded,
    files: model.shards.map((h) => ({ file: h.file, bytes: h.fileSize, tensors: h.tensors.length })),
    totalBytes: model.totalBytes,
    parameters,
    dtypes,
    warnings: [...model.warnings],
  };
  if (model.config) facts.config = configFacts(model.config);
  return facts;
}

function configFacts(config: Record<string, unknown>): NonNullable<InspectReport['config']> {
  const facts: NonNullable<InspectReport['config']> = {};
  const text = (key: string): string | undefined =>
    typeof config[key] === 'string' ? config[key] : undefined;
  const number = (...keys: string[]): number | undefined => {
    for (const key of keys) if (typeof config[key] === 'number') return config[key];
    return undefined;
  };
  const modelType = text('model_type');
  if (modelType !== undefined) facts.modelType = modelType;
  const architectures = config.architectures;
  if (Array.isArray(architectures) && architectures.every((a) => typeof a === 'string'))
    facts.architectures = architectures;
  const hiddenSize = number('hidden_size', 'n_embd', 'd_model');
  if (hiddenSize !== undefined) facts.hiddenSize = hiddenSize;
  const layers = number('num_hidden_layers', 'n_layer', 'num_layers');
  if (layers !== undefined) facts.layers = layers;
  const vocabSize = number('vocab_size');
  if (vocabSize !== undefined) facts.vocabSize = vocabSize;
  const torchDtype = text('torch_dtype') ?? text('dtype');
  if (torchDtype !== undefined) facts.torchDtype = torchDtype;
  return facts;
}

/** Bytes in binary units, e.g. "1.50 GiB"; exact below 1 KiB. */
export function formatBytes(bytes: number): string {
  const units = ['B', 'KiB', 'MiB', 'GiB', 'TiB'];
  let value = bytes;
  let unit = 0;
  while (value >= 1024 && unit < units.length - 1) {
    value /= 1024;
    unit += 1;
  }
  // Whole bytes below 1 KiB: a rate (bytes per second) is a fraction.
  return unit === 0 ? `${Math.round(bytes)} B` : `${value.toFixed(2)} ${units[unit]}`;
}

/**
 * Makes text safe to print on a terminal: control characters (C0 but the newline and tab, DEL, C1)
 * from file names, tensor names or config.json strings are shown as \xNN instead of acting as escapes.
 */
export function escapeTerminal(text: string): string {
  let out = '';
  for (const c of text) {
    const code = c.codePointAt(0) ?? 0;
    const control = (code < 0x20 && c !== '\n' && c !== '\t') || (code >= 0x7f && code <= 0x9f);
    out += control
      ? `\\x${code.toString(16).padStart(2, '0')}`
      : BIDI.has(code)
        ? `\\u{${code.toString(16)}}`
        : c;
  }
  return out;
}

/**
 * Unicode's directional formatting characters (LRE…RLO, LRI…PDI, LRM, RLM, ALM): printed raw they
 * reorder what a terminal shows after them, so a tensor or file name could make the report lie.
 */
const BIDI = new Set([
  0x200e, 0x200f, 0x061c, 0x202a, 0x202b, 0x202c, 0x202d, 0x202e, 0x2066, 0x2067, 0x2068, 0x2069,
]);

/** The longest name the human table prints whole; a longer one shows its start and its length. */
export const MAX_SHOWN_NAME = 200;

/** A name for a terminal line: escaped, and a huge one cut to its start with its length said. */
export function shownName(name: string): string {
  const escaped = escapeTerminal(name);
  return escaped.length <= MAX_SHOWN_NAME
    ? escaped
    : `${escaped.slice(0, MAX_SHOWN_NAME - 40)}… (${name.length} characters)`;
}

/** The human table the CLI prints: one row per tensor, then totals and config facts. */
export function formatInspect(report: InspectReport): string {
  const header = ['name', 'dtype', 'shape', 'shard', 'bytes'];
  const rows = report.tensors.map((t) => [
    shownName(t.name),
    t.dtype,
    `[${t.shape.join(', ')}]`,
    shownName(t.file),
    String(t.bytes),
  ]);
  // A loop, not Math.max(...column): spreading 120k+ arguments overflows the call stack.
  const widths = header.map((h) => h.length);
  for (const row of rows)
    row.forEach((cell, i) => {
      widths[i] = Math.max(at(widths, i, 'column widths'), cell.length);
    });
  const line = (cells: string[]): string =>
    cells
      .map((cell, i) => {
        const width = at(widths, i, 'column widths');
        return i === cells.length - 1 ? cell.padStart(width) : cell.padEnd(width);
      })
      .join('  ')
      .trimEnd();
  const out = [
    `${report.name}${report.sharded ? ` (sharded, ${report.files.length} files)` : ''}`,
    line(header),
    line(widths.map((w) => '-'.repeat(w))),
    ...rows.map(line),
    '',
    `tensors: ${report.tensors.length}   parameters: ${report.parameters.toLocaleString('en-US')}   data: ${formatBytes(report.totalBytes)} (${report.totalBytes} bytes)`,
    `dtypes: ${Object.entries(report.dtypes)
      .map(([dtype, count]) => `${dtype} ${count.toLocaleString('en-US')}`)
      .join(', ')}`,
    ...report.files.map((f) => `file: ${f.file}  ${f.tensors} tensors  ${formatBytes(f.bytes)}`),
  ];
  const c = report.config;
  if (c) {
    const facts = [
      c.modelType !== undefined ? `model_type ${c.modelType}` : undefined,
      c.architectures !== undefined ? `architectures ${c.architectures.join(', ')}` : undefined,
      c.hiddenSize !== undefined ? `hidden_size ${c.hiddenSize}` : undefined,
      c.layers !== undefined ? `layers ${c.layers}` : undefined,
      c.vocabSize !== undefined ? `vocab_size ${c.vocabSize}` : undefined,
      c.torchDtype !== undefined ? `torch_dtype ${c.torchDtype}` : undefined,
    ].filter((fact) => fact !== undefined);
    out.push(`config: ${facts.length > 0 ? facts.join(', ') : '(no known fields)'}`);
  }
  for (const warning of report.warnings) out.push(`warning: ${warning}`);
  return `${escapeTerminal(out.join('\n'))}\n`;
}
