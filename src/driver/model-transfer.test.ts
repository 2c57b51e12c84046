// The open reply's columns: after a structured clone (what postMessage does) every tensor decodes to
// the record the spec it was written from implies, shards, scalars and non-ASCII names included.
import { describe, expect, it } from 'vitest';
import { checkCompatibility, compatColumns, issueAt } from '../format/compat.ts';
import { inspectModel } from '../format/inspect.ts';
import { openModel } from '../format/model.ts';
import { tensorByteLength } from '../format/safetensors.ts';
import { indexJson, planShards } from '../format/sharded.ts';
import { compareNames, serializeSafetensors, type TensorSpec } from '../format/write.ts';
import { memorySource } from '../io/source.ts';
import { summarizeModel, tensorName, tensorRecord, tensorRecords } from './model-transfer.ts';

const SPECS: TensorSpec[] = [
  { name: 'model.embed_tokens.weight', dtype: 'BF16', shape: [10, 4] },
  { name: 'model.layers.0.self_attn.q_proj.weight', dtype: 'F32', shape: [4, 4] },
  { name: 'model.layers.0.scale', dtype: 'F64', shape: [] },
  { name: 'model.layers.0.mask', dtype: 'BOOL', shape: [1, 1, 3, 3] },
  { name: 'model.layers.1.ñame·ü', dtype: 'F16', shape: [2, 0, 3] },
  { name: 'lm_head.weight', dtype: 'I64', shape: [3] },
];

async function shardedModel() {
  const plan = planShards(SPECS, 120);
  const files = [
    {
      name: 'model.safetensors.index.json',
      source: memorySource('model.safetensors.index.json', new TextEncoder().encode(indexJson(plan))),
    },
  ];
  const shardOf = new Map<string, string>();
  for (const shard of plan.shards) {
    const bytes = serializeSafetensors(
      shard.tensors.map((t) => ({ ...t, data: new Uint8Array(tensorByteLength(t.dtype, t.shape)) })),
    );
    files.push({ name: shard.file, source: memorySource(shard.file, bytes) });
    for (const t of shard.tensors) shardOf.set(t.name, shard.file);
  }
  return { model: await openModel('agent', files), shardOf, shards: plan.shards.length };
}

describe('summarizeModel', () => {
  it('decodes, after a structured clone, to every tensor of the specs in name order', async () => {
    const { model, shardOf, shards } = await shardedModel();
    expect(shards).toBeGreaterThan(1);
    const summary = structuredClone(summarizeModel(model));
    const expected = [...SPECS]
      .sort((a, b) => compareNames(a.name, b.name))
      .map((s) => ({
        name: s.name,
        dtype: s.dtype,
        shape: s.shape,
        file: shardOf.get(s.name),
        bytes: tensorByteLength(s.dtype, s.shape),
      }));
    expect(summary.tensors.count).toBe(SPECS.length);
    expect(tensorRecords(summary)).toEqual(expected);
    expect(expected.map((_, i) => tensorName(summary.tensors, i))).toEqual(expected.map((t) => t.name));
    expect(tensorRecord(summary, 4)).toEqual(expected[4]);
  });

  it('keeps every other fact of the inspect report', async () => {
    const { model } = await shardedModel();
    const { tensors, ...facts } = inspectModel(model);
    const { tensors: columns, ...summary } = summarizeModel(model);
    expect(summary).toEqual(facts);
    expect(columns.count).toBe(tensors.length);
  });

  it('leaves the inspect report (the CLI JSON) in its key order', async () => {
    const { model } = await shardedModel();
    expect(Object.keys(inspectModel(model))).toEqual([
      'name',
      'sharded',
      'files',
      'tensors',
      'totalBytes',
      'parameters',
      'dtypes',
      'warnings',
    ]);
  });
});

describe('the check reply (compatColumns)', () => {
  it('decodes, after a structured clone, to every issue of the report in its order', async () => {
    const { model: base } = await shardedModel();
    const single = (specs: TensorSpec[]) => {
      const bytes = serializeSafetensors(
        specs.map((t) => ({ ...t, data: new Uint8Array(tensorByteLength(t.dtype, t.shape)) })),
      );
      return [{ name: 'model.safetensors', source: memorySource('model.safetensors', bytes) }];
    };
    // One agent misses a tensor and has an extra one; the other differs in a shape and a dtype.
    const first = await openModel(
      'first',
      single([...SPECS.slice(1), { name: 'x', dtype: 'F32', shape: [1] }]),
    );
    const second = await openModel(
      'second',
      single(
        SPECS.map((s, i) =>
          i === 1 ? { ...s, shape: [4, 5] } : i === 2 ? { ...s, dtype: 'F32' as const } : s,
        ),
      ),
    );
    const report = checkCompatibility(base, [first, second]);
    expect(new Set(report.issues.map((i) => i.kind))).toEqual(
      new Set(['missing', 'extra', 'shape', 'dtype']),
    );
    const summary = structuredClone(compatColumns(base, [first, second]));
    const { issues, ...rest } = report;
    const { issues: columns, ...summaryRest } = summary;
    expect(summaryRest).toEqual(rest);
    expect(columns.count).toBe(issues.length);
    expect(Array.from({ length: columns.count }, (_, i) => issueAt(columns, i))).toEqual(issues);
  });
});
