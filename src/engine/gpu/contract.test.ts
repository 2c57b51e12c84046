// The WGSL↔TypeScript contract, checked by reflecting each kernel's assembled source: bindings,
// struct layouts, override constants and the shared constants the host relies on.
import { describe, expect, it } from 'vitest';
import { WgslReflect, type FunctionInfo } from 'wgsl_reflect/wgsl_reflect.module.js';
import {
  MAGNITUDE_BINS,
  MAGNITUDE_MAX_EXPONENT,
  MAGNITUDE_MIN_EXPONENT,
  PAIRS_MAX_AGENTS,
} from '../../methods/stats.ts';
import { RADIX_BINS } from '../../methods/select.ts';
import { CONVERT_KERNEL } from './kernels/convert.ts';
import { DARE_NORMS_KERNEL, NORM_GROUPS } from './kernels/dare_norms.ts';
import { kernelSource, type KernelSpec } from './kernels/kernel.ts';
import { LINEAR_KERNEL } from './kernels/linear.ts';
import { MATMUL_KERNEL, LOW_RANK_PARAMS_WORDS, lowRankParams } from './kernels/low_rank.ts';
import {
  DELLA_AGENT_WORDS,
  DELLA_MASK_KERNEL,
  DELLA_MODE,
  DELLA_SPEC_HEADER_WORDS,
  encodeDellaSpec,
} from './kernels/della_mask.ts';
import { DELLA_NORMS_KERNEL } from './kernels/della_norms.ts';
import { SLERP_KERNEL, SLERP_SUMS_KERNEL, SUM_GROUPS } from './kernels/slerp.ts';
import {
  DRAW_FIELDS,
  MASK_DRAW_SOURCE,
  MASK_ITEMS,
  MASK_KERNEL,
  VIEW_FIELDS,
  encodeDraw,
  encodeView,
} from './kernels/mask.ts';
import { OVERLAP_COUNT_ITEMS, OVERLAP_COUNT_KERNEL, overlapCountWords } from './kernels/overlap_count.ts';
import { RAM_KERNEL } from './kernels/ram.ts';
import { STATS_KERNEL, statsLayout } from './kernels/stats.ts';
import { BRANCH_ROUNDS, BRANCH_SLOTS, branchStride } from './kernels/branches.ts';
import { TIES_KERNEL } from './kernels/ties.ts';
import { TOPK_HIST_KERNEL } from './kernels/topk_hist.ts';
import { TOPK_SCAN_KERNEL } from './kernels/topk_scan.ts';
import { TOPK_TIES_KERNEL } from './kernels/topk_ties.ts';
import { BRACKET_COUNTS, COUNT_QUADS, TOPK_COUNT_KERNEL } from './kernels/topk_count.ts';
import { NO_KEY, TOPK_SAMPLE_KERNEL } from './kernels/topk_sample.ts';
import {
  AGENT_BYTES,
  AGENT_FIELDS,
  encodeAgents,
  encodeParams,
  PARAMS_BYTES,
  PARAMS_FIELDS,
} from './layout.ts';
import { maskGeometry, maskLayout } from '../../methods/mask-geometry.ts';
import { COUNT_ITEMS, STATS_ITEMS, WORKGROUP_SIZE } from './plumbing.ts';

const KERNELS: KernelSpec[] = [
  CONVERT_KERNEL,
  RAM_KERNEL,
  LINEAR_KERNEL,
  TIES_KERNEL,
  STATS_KERNEL,
  OVERLAP_COUNT_KERNEL,
  TOPK_HIST_KERNEL,
  TOPK_TIES_KERNEL,
  TOPK_SCAN_KERNEL,
  TOPK_SAMPLE_KERNEL,
  TOPK_COUNT_KERNEL,
  DARE_NORMS_KERNEL,
  MASK_KERNEL,
  DELLA_MASK_KERNEL,
  DELLA_NORMS_KERNEL,
  SLERP_SUMS_KERNEL,
  SLERP_KERNEL,
];

/** Overrides whose initialiser derives them from others: the host never sets them. */
function derivedOverrides(source: string): Set<string> {
  return new Set([...source.matchAll(/override (\w+): u32 = [^;]*[A-Z_]{3,}/g)].map((m) => m[1]!));
}

function usedOverrides(main: FunctionInfo): Set<string> {
  const seen = new Set<FunctionInfo>();
  const names = new Set<string>();
  const walk = (f: FunctionInfo): void => {
    if (seen.has(f)) return;
    seen.add(f);
    for (const o of f.overrides) names.add(o.name);
    f.calls.forEach(walk);
  };
  walk(main);
  return names;
}

function constant(source: string, name: string): number {
  const match = new RegExp(`const ${name}: [iu]32 = (-?\\d+)u?;`).exec(source);
  if (!match) throw new Error(`no const ${name}`);
  return Number(match[1]);
}

describe.each(KERNELS.map((k) => [k.name, k] as const))('kernel %s', (_, spec) => {
  const source = kernelSource(spec);
  const reflect = new WgslReflect(source);
  const main = reflect.entry.compute.find((f) => f.name === 'main');

  it('has one compute entry point main with the engine workgroup size', () => {
    expect(reflect.entry.compute.map((f) => f.name)).toEqual(['main']);
    expect(main!.workgroupSize).toEqual([WORKGROUP_SIZE, 1, 1]);
  });

  it('uses exactly the bindings the host lays out, with the same names, types and access', () => {
    const used = main!.resources
      .map((v) => ({
        group: v.group,
        binding: v.binding,
        name: v.name,
        type: v.resourceType === 0 ? 'uniform' : v.access === 'read' ? 'read-only-storage' : 'storage',
      }))
      .sort((a, b) => a.binding - b.binding);
    expect(used).toEqual(spec.bindings.map((b) => ({ group: 0, ...b })));
  });

  it('sets every override the entry point uses and nothing else', () => {
    const derived = derivedOverrides(source);
    const used = [...usedOverrides(main!)].filter((name) => !derived.has(name)).sort();
    expect(used).toEqual([...spec.constants].sort());
    const declared = new Set(reflect.overrides.map((o) => o.name));
    for (const name of spec.constants) expect(declared.has(name)).toBe(true);
  });

  it('declares Params and Agent exactly as layout.ts writes them', () => {
    const params = reflect.getStructInfo('Params')!;
    expect(params.members.map((m) => [m.name, m.offset, m.size, m.type.name])).toEqual(
      PARAMS_FIELDS.map((f, i) => [f.name, i * 4, 4, f.type]),
    );
    expect(params.size).toBeLessThanOrEqual(PARAMS_BYTES);
    const agent = reflect.getStructInfo('Agent')!;
    expect(agent.members.map((m) => [m.name, m.offset, m.size, m.type.name])).toEqual(
      AGENT_FIELDS.map((f, i) => [f.name, i * 4, 4, f.type]),
    );
    expect(agent.size).toBe(AGENT_BYTES);
    const agents = reflect.storage.find((v) => v.name === 'agents')!;
    expect(agents.stride).toBe(AGENT_BYTES);
  });
});

describe('constants shared by WGSL and TypeScript', () => {
  const stats = kernelSource(STATS_KERNEL);
  it('has the magnitude bins of src/methods/stats.ts', () => {
    expect(constant(stats, 'BINS')).toBe(MAGNITUDE_BINS.length);
    expect(constant(stats, 'MIN_EXP')).toBe(MAGNITUDE_MIN_EXPONENT);
    expect(constant(stats, 'MAX_EXP')).toBe(MAGNITUDE_MAX_EXPONENT);
  });

  it('counts STATS_ITEMS and COUNT_ITEMS elements per invocation and RADIX_BINS histogram bins', () => {
    expect(2 * constant(stats, 'PAIRS')).toBe(STATS_ITEMS);
    expect(2 * constant(kernelSource(TOPK_HIST_KERNEL), 'PAIRS')).toBe(COUNT_ITEMS);
    expect(constant(kernelSource(TOPK_HIST_KERNEL), 'MAX_BINS')).toBe(RADIX_BINS);
  });

  it('counts OVERLAP_COUNT_ITEMS elements per invocation in the ramplus_tl pass, into 3N + 2 counters', () => {
    const source = kernelSource(OVERLAP_COUNT_KERNEL);
    expect(2 * constant(source, 'PAIRS')).toBe(OVERLAP_COUNT_ITEMS);
    // Each pair adds at most 2 to an agent's 8-bit field.
    expect(OVERLAP_COUNT_ITEMS).toBeLessThanOrEqual(255);
    expect(source).toContain('override NONFINITE: u32 = 2u * AGENTS;');
    // changed and unique (2N), nonFinite, then one per model: the last at NONFINITE + 1 + N.
    expect(overlapCountWords(3)).toBe(2 * 3 + 1 + 3 + 1);
  });

  it('counts COUNT_QUADS vec4 words per invocation into BRACKET_COUNTS counters per row, and samples NO_KEY past a window', () => {
    const count = kernelSource(TOPK_COUNT_KERNEL);
    expect(constant(count, 'QUADS')).toBe(COUNT_QUADS);
    expect(constant(count, 'COUNTS')).toBe(BRACKET_COUNTS);
    // Eight keys per vec4, each adding at most 1 to an 8-bit field.
    expect(8 * COUNT_QUADS).toBeLessThanOrEqual(255);
    expect(kernelSource(TOPK_SAMPLE_KERNEL)).toContain(`const NO_KEY: u32 = 0x${NO_KEY.toString(16)}u;`);
  });

  it('counts branches in BRANCH_ROUNDS rounds per invocation into BRANCH_SLOTS copies of 2N counters', () => {
    const ties = kernelSource(TIES_KERNEL);
    expect(constant(ties, 'BRANCH_ROUNDS')).toBe(BRANCH_ROUNDS);
    expect(constant(ties, 'BRANCH_SLOTS')).toBe(BRANCH_SLOTS);
    // A round adds at most 4 (two pairs of two lanes) to a class's 8-bit field.
    expect(4 * BRANCH_ROUNDS).toBeLessThanOrEqual(255);
    expect(ties).toContain('return (2u * AGENTS + 15u) & ~15u;');
    // 2N counters (classes 2..N, each agent alone, conflicts) in a copy of whole 64-byte lines.
    for (const n of [1, 3, 8, 9, 32]) {
      expect(branchStride(n)).toBeGreaterThanOrEqual(2 * n);
      expect(branchStride(n) % 16).toBe(0);
    }
  });

  it('writes NORM_GROUPS partial sums per agent in the DARE norms pass', () => {
    expect(constant(kernelSource(DARE_NORMS_KERNEL), 'NORM_GROUPS')).toBe(NORM_GROUPS);
  });

  it('lays the DELLA norms out as DARE’s, and the SLERP sums in SUM_GROUPS triples', () => {
    expect(constant(kernelSource(DELLA_NORMS_KERNEL), 'NORM_GROUPS')).toBe(NORM_GROUPS);
    expect(constant(kernelSource(SLERP_SUMS_KERNEL), 'SUM_GROUPS')).toBe(SUM_GROUPS);
  });

  it('reads DellaSpec as encodeDellaSpec writes it, and its modes', () => {
    const source = kernelSource(DELLA_MASK_KERNEL);
    const reflect = new WgslReflect(source);
    const agent = reflect.getStructInfo('DellaAgent')!;
    expect(agent.members.map((m) => [m.name, m.offset, m.type.name])).toEqual([
      ['low', 0, 'u32'],
      ['span', 4, 'u32'],
      ['mode', 8, 'u32'],
      ['factor', 12, 'f32'],
    ]);
    expect(agent.size).toBe(DELLA_AGENT_WORDS * 4);
    const spec = reflect.getStructInfo('DellaSpec')!;
    expect(spec.members.map((m) => [m.name, m.offset])).toEqual([
      ['length', 0],
      ['inner', 4],
      ['pow2', 8],
      ['pad', 12],
      ['agents', DELLA_SPEC_HEADER_WORDS * 4],
    ]);
    expect(constant(source, 'MODE_INVERSE_P')).toBe(DELLA_MODE.inverseP);
    expect(constant(source, 'MODE_FACTOR')).toBe(DELLA_MODE.factor);
    expect(constant(source, 'MODE_KEEP_ALL')).toBe(DELLA_MODE.keepAll);
    const words = new Uint32Array(
      encodeDellaSpec({ length: 5, inner: 3, slab: 15 }, [
        { threshold: { low: 7, span: 9 }, inverseP: true, factor: 0 },
        { threshold: null, inverseP: false, factor: 1 },
      ]),
    );
    expect(Array.from(words.subarray(0, 8))).toEqual([5, 3, 8, 0, 7, 9, DELLA_MODE.inverseP, 0]);
    expect(words[10]).toBe(DELLA_MODE.keepAll);
  });

  it('derives the counter layout like statsLayout', () => {
    // The overrides at the top of stats.wgsl, evaluated for N = 3 as the host computes them.
    const n = 3;
    const bins = MAGNITUDE_BINS.length;
    expect(statsLayout(n)).toEqual({
      overlap: n + 1,
      sign: n + 1 + n * n,
      magnitude: n + 2 + n * n,
      ulp: n + 2 + n * n + n * bins,
      nonFinite: n + 2 + n * n + n * bins + n,
      pairs: n + 2 + n * n + n * bins + n + n + 2,
      sets: n + 2 + n * n + n * bins + n + n + 2 + n * n,
      count: n + 2 + n * n + n * bins + n + n + 2 + n * n + 2 ** n,
    });
    // Past 8 agents there are no per-set counters and so no pair or set region.
    const wide = statsLayout(9);
    expect(wide.count).toBe(wide.pairs);
    expect(wide.sets).toBe(wide.pairs);
    expect(stats).toContain('override OVERLAP: u32 = AGENTS + 1u;');
    expect(stats).toContain('override SIGN: u32 = OVERLAP + AGENTS * AGENTS;');
    expect(stats).toContain('override MAGNITUDE: u32 = SIGN + 1u;');
    expect(stats).toContain('override ULP: u32 = MAGNITUDE + AGENTS * BINS;');
    expect(stats).toContain('override NONFINITE: u32 = ULP + AGENTS;');
    expect(stats).toContain('override COUNTERS: u32 = NONFINITE + AGENTS + 2u;');
    expect(stats).toContain('override PAIRWISE: u32 = COUNTERS;');
    expect(stats).toContain('override SET_COUNTS: u32 = PAIRWISE + AGENTS * AGENTS;');
    expect(constant(stats, 'SETS_CAP')).toBe(PAIRS_MAX_AGENTS);
  });
});

describe('layout encoders', () => {
  it('write Params fields at their offsets, the start split into 32-bit halves', () => {
    const bytes = encodeParams({
      count: 7,
      slotWords: 4,
      start: 2 ** 32 * 3 + 5,
      groupsX: 2,
      groups: 3,
      epsilon: 1e-5,
      scale: 0.5,
      nameHash: 0xdeadbeef,
      seed: 9,
      digitShift: 20,
      digitBits: 11,
      normalize: true,
    });
    const view = new DataView(bytes.buffer);
    const at = (name: string): number => PARAMS_FIELDS.findIndex((f) => f.name === name) * 4;
    expect(bytes.byteLength).toBe(PARAMS_BYTES);
    expect(view.getUint32(at('count'), true)).toBe(7);
    expect(view.getUint32(at('start_lo'), true)).toBe(5);
    expect(view.getUint32(at('start_hi'), true)).toBe(3);
    expect(view.getFloat32(at('epsilon'), true)).toBe(Math.fround(1e-5));
    expect(view.getUint32(at('name_hash'), true)).toBe(0xdeadbeef);
    expect(view.getUint32(at('normalize'), true)).toBe(1);
  });

  it('write one Agent per stride', () => {
    const bytes = encodeAgents([{ lambda: 1.5 }, { weight: -2, threshold: 0x7f800000, searching: true }]);
    const view = new DataView(bytes.buffer);
    expect(bytes.byteLength).toBe(2 * AGENT_BYTES);
    expect(view.getFloat32(0, true)).toBe(1.5);
    expect(view.getFloat32(AGENT_BYTES + 4, true)).toBe(-2);
    expect(view.getUint32(AGENT_BYTES + 16, true)).toBe(0x7f800000);
    expect(view.getUint32(AGENT_BYTES + 28, true)).toBe(1);
  });
});

describe('tensor view shaders', () => {
  const mask = kernelSource(MASK_KERNEL);
  const fields = (source: string, struct: string): [string, number, number, string][] =>
    new WgslReflect(source)
      .getStructInfo(struct)!
      .members.map((m) => [m.name, m.offset, m.size, m.type.name]);

  it('mask.wgsl declares View as encodeView writes it', () => {
    expect(fields(mask, 'View')).toEqual(VIEW_FIELDS.map((f, i) => [f.name, i * 4, 4, f.type]));
    const g = maskGeometry([100, 30], { row0: 7, col0: 3, rows: 50, cols: 20 }, 8, 8);
    const view = new DataView(encodeView(g).buffer);
    const at = (name: string): number => VIEW_FIELDS.findIndex((f) => f.name === name) * 4;
    expect(view.getUint32(at('tensor_cols'), true)).toBe(30);
    expect(view.getUint32(at('row0'), true)).toBe(7);
    expect(view.getUint32(at('block_rows'), true)).toBe(7);
    expect(view.getUint32(at('block_cols'), true)).toBe(3);
    expect(view.getUint32(at('grid_cols'), true)).toBe(7);
  });

  it('mask_draw.wgsl declares Draw as encodeDraw writes it, with a vertex and a fragment entry', () => {
    const reflect = new WgslReflect(MASK_DRAW_SOURCE);
    expect(reflect.entry.vertex.map((f) => f.name)).toEqual(['vs']);
    expect(reflect.entry.fragment.map((f) => f.name)).toEqual(['fs']);
    const used = reflect.entry.fragment[0]!.resources.map((v) => [v.binding, v.name]).sort();
    expect(used).toEqual([
      [0, 'draw'],
      [1, 'grid'],
      [2, 'palette'],
    ]);
    expect(fields(MASK_DRAW_SOURCE, 'Draw')).toEqual(DRAW_FIELDS.map((f, i) => [f.name, i * 4, 4, f.type]));
    const g = maskGeometry([10, 10], null, 4, 4);
    const draw = new DataView(encodeDraw(g, 512, 256).buffer);
    expect(draw.getFloat32(0, true)).toBe(512);
    expect(draw.getFloat32(4, true)).toBe(256);
    expect(draw.getUint32(8, true)).toBe(4);
  });

  it('both shaders lay out a block as maskLayout does, MASK_ITEMS elements per invocation', () => {
    expect(constant(mask, 'ITEMS')).toBe(MASK_ITEMS);
    for (const source of [mask, MASK_DRAW_SOURCE])
      expect(source).toContain('override CELL_STRIDE: u32 = 2u * AGENTS + 3u;');
    expect(maskLayout(3)).toEqual({ unique: 0, shared: 3, conflict: 4, nonFinite: 5, changed: 6, stride: 9 });
  });
});

describe('the low-rank kernel (the eval linear shader, reused)', () => {
  const reflect = new WgslReflect(kernelSource(MATMUL_KERNEL));
  const main = reflect.entry.compute.find((f) => f.name === 'main');

  it('uses exactly its bindings and sets its one override', () => {
    const used = (main?.resources ?? [])
      .map((v) => ({
        group: v.group,
        binding: v.binding,
        name: v.name,
        type: v.resourceType === 0 ? 'uniform' : v.access === 'read' ? 'read-only-storage' : 'storage',
      }))
      .sort((a, b) => a.binding - b.binding);
    expect(used).toEqual(MATMUL_KERNEL.bindings.map((b) => ({ group: 0, ...b })));
    expect([...usedOverrides(main ?? ({} as FunctionInfo))]).toEqual([...MATMUL_KERNEL.constants]);
  });

  it('declares Params as lowRankParams writes it: rows, rank, cols, stride, no offsets, no bias', () => {
    const params = reflect.getStructInfo('Params');
    expect(params?.members.map((m) => [m.name, m.offset, m.type.name])).toEqual(
      ['rows', 'in_dim', 'out_count', 'out_stride', 'out_start', 'w_row_start', 'bias_dtype', 'has_bias'].map(
        (name, i) => [name, i * 4, 'u32'],
      ),
    );
    expect(params?.size).toBe(LOW_RANK_PARAMS_WORDS * 4);
    expect([...lowRankParams(5, 7, 3)]).toEqual([5, 3, 7, 7, 0, 0, 0, 0]);
  });
});
