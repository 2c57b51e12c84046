// Per-kernel cost of the TIES-family passes beside a RAM merge, in one process on dawn.node: each
// kernel runs over one resident window (no reads, no readback) and is timed in process CPU time
// (SwiftShader's threads are this process's) and wall time. On a shared machine compare only rows of
// one run. `node --import ./bin/register.mjs src/bench/kernel-profile.ts [--log2 23] [--repeats 3]`
// `--alt shaders/ties.wgsl=/tmp/ties.wgsl[,…]` also times the TIES merge (with branch counts), the
// count pass and the statistics pass built with those files in place of the named ones, interleaved with the rest in the same
// process, so that this VM's drift hits both alike (an A/A of identical files still differs by up to
// 7% at --repeats 25 --log2 21). `--only a|b` names several rows.
import { readFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { bf16ToF32 } from '../format/dtype.ts';
import { floatStream } from '../demo/rng.ts';
import { acquireNodeGpu } from '../cli/node-gpu.ts';
import { divisionIsExact } from '../engine/gpu/division.ts';
import { requestEngineDevice } from '../engine/gpu/device.ts';
import {
  createKernel,
  DTYPE_CODE,
  type Kernel,
  type KernelIo,
  type KernelSpec,
} from '../engine/gpu/kernels/kernel.ts';
import { createRamKernel } from '../engine/gpu/kernels/ram.ts';
import { createStatsKernel, STATS_KERNEL, statsLayout } from '../engine/gpu/kernels/stats.ts';
import { createOverlapCountKernel, overlapCountGroups } from '../engine/gpu/kernels/overlap_count.ts';
import { createTiesKernel, TIES_KERNEL, tiesMergeDispatch } from '../engine/gpu/kernels/ties.ts';
import { createTopKHistKernel, TOPK_HIST_SLOTS } from '../engine/gpu/kernels/topk_hist.ts';
import { createTopKScanKernel, TIE_CARRY_WORDS } from '../engine/gpu/kernels/topk_scan.ts';
import { createTopKTiesKernel, spanMarkDispatch, tieMarkDispatch } from '../engine/gpu/kernels/topk_ties.ts';
import {
  BRACKET_HEADER,
  bracketGroups,
  CHUNK_ELEMENTS,
  createTopKCountKernel,
  TOPK_COUNT_KERNEL,
} from '../engine/gpu/kernels/topk_count.ts';
import { NO_KEY } from '../engine/gpu/kernels/topk_sample.ts';
import { flagCount, mergeConstants } from '../engine/gpu/kernels/merge-bindings.ts';
import { branchWords } from '../engine/gpu/kernels/branches.ts';
import { encodeAgents, encodeParams, PARAMS_BYTES, type WindowParams } from '../engine/gpu/layout.ts';
import {
  countGroups,
  mergeGroups,
  splitDispatch,
  statsGroups,
  windowCapacity,
  type Dispatch,
} from '../engine/gpu/plumbing.ts';
import {
  RADIX_BINS,
  RADIX_DIGITS,
  settleSingleKey,
  startTopK,
  stepTopK,
  topKCount,
  type TopKState,
} from '../methods/select.ts';
import { rlUpdate } from './synthetic.ts';
import { at } from '../io/checked.ts';

const { values } = parseArgs({
  options: {
    log2: { type: 'string', default: '23' },
    repeats: { type: 'string', default: '3' },
    density: { type: 'string', default: '0.5' },
    /** Only the kernels whose names contain this, or one of a|b|… (RAM is always timed, as the unit). */
    only: { type: 'string', default: '' },
    /** path=file,…: shader files replaced in the "(alt)" rows (see above). */
    alt: { type: 'string', default: '' },
  },
});
const numel = 2 ** Number(values.log2);
const repeats = Number(values.repeats);
const density = Number(values.density);
const AGENTS = 3;
/** Shares of elements each agent changed: RL updates, most elements untouched. */
const CHANGED = [0.3, 0.6, 0.8];

/** One bf16 set as the merge sees it: base, then the agents, each 1–2 bf16 steps off where changed. */
function rlSet(): Uint16Array[] {
  const random = floatStream(12);
  const word = new DataView(new ArrayBuffer(4));
  // About normal, σ ≈ 0.02 as in a trained projection: few exponents, so |τ| has few distinct values.
  const base = Uint16Array.from({ length: numel }, () => {
    word.setFloat32(0, (random() + random() + random() - 1.5) * 0.04);
    return word.getUint32(0) >>> 16;
  });
  // rlUpdate draws 1–8 steps; most RL updates are one or two, so draw those mostly.
  const agents = CHANGED.map((share) =>
    base.map((b) =>
      random() >= share ? b : random() < 0.8 ? oneOrTwoSteps(b, random) : rlUpdate(b, random),
    ),
  );
  return [base, ...agents];
}

function oneOrTwoSteps(bits: number, random: () => number): number {
  const step = (random() < 0.6 ? 1 : 2) * (random() < 0.5 ? -1 : 1);
  const magnitude = (bits & 0x7fff) + step;
  // Stay among the normal numbers: no step into subnormals, zero or Inf.
  return magnitude < 0x80 || magnitude >= 0x7f80 ? bits : (bits & 0x8000) | magnitude;
}

/** |τ| keys of agent t as the kernels compute them (f32 difference of the bf16 values). */
function keys(models: Uint16Array[], t: number): Uint32Array {
  const word = new DataView(new ArrayBuffer(4));
  const base = at(models, 0);
  return Uint32Array.from(at(models, t + 1), (a, i) => {
    const b = at(base, i);
    if (a === b) return 0;
    word.setFloat32(0, bf16ToF32(a) - bf16ToF32(b));
    return word.getUint32(0) & 0x7fffffff;
  });
}

/** The select's result on the CPU, digit by digit as TopKSelect settles it. */
function cpuSelect(k: Uint32Array, count: number): TopKState {
  let s = startTopK(count, numel);
  for (const [digit, { shift, bits }] of RADIX_DIGITS.entries()) {
    if (!s.searching) break;
    const high = shift + bits;
    const hist = new Uint32Array(RADIX_BINS);
    let least = 2 ** shift;
    let greatest = -1;
    for (const key of k) {
      if (!key || key >>> high !== s.prefix >>> high) continue;
      const bin = (key >>> shift) & ((1 << bits) - 1);
      hist[bin] = at(hist, bin) + 1;
    }
    const next = stepTopK(s, hist, digit);
    if (digit > 0 || !next.searching) {
      s = next;
      continue;
    }
    for (const key of k)
      if (key && key >>> shift === next.prefix >>> shift) {
        least = Math.min(least, key & (2 ** shift - 1));
        greatest = Math.max(greatest, key & (2 ** shift - 1));
      }
    s = settleSingleKey(next, least, greatest);
  }
  return s;
}

const node = await acquireNodeGpu();
const engineDevice = await requestEngineDevice(node.gpu);
const device = engineDevice.device;
const models = rlSet();
const states = models.slice(1).map((_, t) => {
  const k = keys(models, t);
  const s = cpuSelect(k, topKCount(density, numel));
  let ties = 0;
  for (const key of k) if (key !== 0 && key === s.threshold) ties++;
  process.stdout.write(
    `agent ${t}: threshold 0x${s.threshold.toString(16)}, ties kept ${s.tiesToKeep} of ${ties} ` +
      `(${((100 * ties) / numel).toFixed(1)}% of elements)\n`,
  );
  return s;
});

const usage = GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_DST | GPUBufferUsage.COPY_SRC;
const buffer = (label: string, size: number, use = usage): GPUBuffer =>
  device.createBuffer({ label: `KernelProfile.${label}`, size, usage: use });
const slotBytes = numel * 2;
const inputs = buffer('inputs', slotBytes * (AGENTS + 1));
models.forEach((m, s) => device.queue.writeBuffer(inputs, s * slotBytes, m));
const agentsBuffer = buffer('agents', encodeAgents(states).byteLength);
const params = buffer('params', PARAMS_BYTES, GPUBufferUsage.UNIFORM | GPUBufferUsage.COPY_DST);
const tieCounts = buffer('tie_counts', windowCapacity(numel, AGENTS, 2, 2, 2).tieBytes);
const carry = buffer('carry', TIE_CARRY_WORDS * AGENTS * 4);
const io: KernelIo = {
  params,
  inputs,
  agents: agentsBuffer,
  output: buffer('output', slotBytes),
  flags: buffer('flags', flagCount(AGENTS) * 4),
  histogram: buffer('histogram', AGENTS * RADIX_BINS * TOPK_HIST_SLOTS * 4),
  tie_counts: tieCounts,
  carry,
  counters: buffer('counters', statsLayout(AGENTS).count * 4),
  branches: buffer('branches', branchWords(AGENTS) * 4),
};
const bracketBuffer = buffer('bracket', (BRACKET_HEADER + 3 * AGENTS) * 4);
device.queue.writeBuffer(bracketBuffer, 0, bracketRows(false));
const rangeBuffer = buffer('range', (BRACKET_HEADER + 3 * AGENTS) * 4);
device.queue.writeBuffer(rangeBuffer, 0, bracketRows(true));
const collected = buffer('collected', numel * AGENTS * 4);
const chunks = buffer('chunks', 2 * AGENTS * bracketGroups(numel) * 4);
const max = device.limits.maxComputeWorkgroupsPerDimension;

interface Step {
  name: string;
  groups: number;
  kernels: { kernel: Kernel; dispatch?: Dispatch; io?: KernelIo }[];
  params?: Partial<WindowParams>;
  agents?: Uint8Array;
  clear?: GPUBuffer;
}

const mergeAgents = encodeAgents(
  states.map((s) => ({ weight: 1, threshold: s.threshold, tiesToKeep: s.tiesToKeep })),
);
const histAgents = encodeAgents(states.map(() => ({ prefix: 0, searching: true })));
const { shift, bits } = at(RADIX_DIGITS, 0);
/**
 * The count kernel's rows as a sample would bracket each threshold: `around` false, the threshold's
 * key alone; true, the nearest distinct keys above and below it, so that the whole run of the
 * threshold's key lies between and is collected (the most a bracket of few distinct keys collects).
 */
function bracketRows(around: boolean): Uint32Array {
  const rows = new Uint32Array(BRACKET_HEADER + 3 * AGENTS);
  rows[0] = numel;
  rows[1] = bracketGroups(numel);
  states.forEach((s, t) => {
    const key = s.tiesToKeep > 0 ? s.threshold : s.threshold + 1;
    const distinct = [...new Set(keys(models, t))].sort((a, b) => a - b);
    const i = distinct.indexOf(key);
    rows[BRACKET_HEADER + 3 * t] = t;
    rows[BRACKET_HEADER + 3 * t + 1] = around && i >= 0 ? (distinct[i + 1] ?? key) : key;
    rows[BRACKET_HEADER + 3 * t + 2] = around && i > 0 ? (distinct[i - 1] ?? NO_KEY) : NO_KEY;
  });
  return rows;
}
// In order: the tie marks of one repeat are scanned into cutoffs, which the merge that follows uses.
const tiesIo = { ...io, tie_cutoffs: carry };
const tiesDispatch = tiesMergeDispatch(splitDispatch(mergeGroups(numel), max), max);
const variant = {
  inDtype: 'BF16',
  outDtype: 'BF16',
  agents: AGENTS,
  correctDivision: !(await divisionIsExact(device)),
} as const;
const steps: Step[] = [
  {
    name: 'ram merge',
    groups: mergeGroups(numel),
    kernels: [{ kernel: await createRamKernel(device, variant) }],
  },
  {
    name: 'topk_hist (first digit)',
    groups: countGroups(numel),
    kernels: [{ kernel: await createTopKHistKernel(device, 'BF16', AGENTS) }],
    params: { digitShift: shift, digitBits: bits },
    agents: histAgents,
    clear: io.histogram,
  },
  {
    name: 'topk_count (threshold key guessed)',
    groups: bracketGroups(numel),
    kernels: [
      {
        kernel: await createTopKCountKernel(device, 'BF16', AGENTS, 0, AGENTS, false),
        io: { ...io, bracket: bracketBuffer, collected, chunks },
      },
    ],
    clear: io.histogram,
  },
  {
    name: 'topk_count (neighbouring keys bracket the threshold: its run collected)',
    groups: bracketGroups(numel),
    kernels: [
      {
        kernel: await createTopKCountKernel(device, 'BF16', AGENTS, 0, AGENTS, true),
        io: { ...io, bracket: rangeBuffer, collected, chunks },
      },
    ],
    clear: io.histogram,
  },
  {
    name: 'topk_ties',
    groups: mergeGroups(numel),
    kernels: [
      {
        kernel: await createTopKTiesKernel(device, 'BF16', AGENTS),
        dispatch: tieMarkDispatch(splitDispatch(mergeGroups(numel), max), max),
      },
    ],
    agents: mergeAgents,
    clear: io.tie_counts,
  },
  {
    name: 'topk_ties (marks in one chunk, as after a bracketed count)',
    groups: mergeGroups(numel),
    kernels: await Promise.all(
      states.map(async (_, t) => ({
        kernel: await createTopKTiesKernel(device, 'BF16', AGENTS, false, t),
        dispatch: spanMarkDispatch(CHUNK_ELEMENTS, max),
      })),
    ),
    agents: encodeAgents(
      states.map((s) => ({
        weight: 1,
        threshold: s.threshold,
        tiesToKeep: s.tiesToKeep,
        tieFirst: CHUNK_ELEMENTS,
        tieEnd: 2 * CHUNK_ELEMENTS,
      })),
    ),
    clear: io.tie_counts,
  },
  {
    name: 'topk_scan',
    groups: mergeGroups(numel),
    kernels: [{ kernel: await createTopKScanKernel(device, AGENTS), dispatch: { x: 1, y: 1, groups: 1 } }],
    agents: mergeAgents,
    clear: carry,
  },
  {
    name: 'ties merge, TIE_BREAK on',
    groups: mergeGroups(numel),
    kernels: [
      {
        kernel: await createTiesKernel(device, variant, { dare: false, tieBreak: true }),
        io: tiesIo,
        dispatch: tiesDispatch,
      },
    ],
    agents: mergeAgents,
  },
  {
    name: 'ties merge, TIE_BREAK on, branch counts',
    groups: mergeGroups(numel),
    kernels: [
      {
        kernel: await createTiesKernel(device, variant, { dare: false, tieBreak: true, countBranches: true }),
        io: tiesIo,
        dispatch: tiesMergeDispatch(splitDispatch(mergeGroups(numel), max), max, true),
      },
    ],
    agents: mergeAgents,
    clear: io.branches,
  },
  {
    name: 'ties merge, TIE_BREAK off',
    groups: mergeGroups(numel),
    kernels: [
      {
        kernel: await createTiesKernel(device, variant, { dare: false, tieBreak: false }),
        io: tiesIo,
        dispatch: tiesDispatch,
      },
    ],
    agents: mergeAgents,
  },
  {
    name: 'task arithmetic merge',
    groups: mergeGroups(numel),
    kernels: [
      {
        kernel: await createTiesKernel(device, variant, {
          dare: false,
          topK: false,
          tieBreak: false,
          consensus: false,
        }),
        io: tiesIo,
        dispatch: tiesDispatch,
      },
    ],
    agents: mergeAgents,
  },
  {
    name: 'task arithmetic merge, branch counts',
    groups: mergeGroups(numel),
    kernels: [
      {
        kernel: await createTiesKernel(device, variant, {
          dare: false,
          topK: false,
          tieBreak: false,
          consensus: false,
          countBranches: true,
        }),
        io: tiesIo,
        dispatch: tiesMergeDispatch(splitDispatch(mergeGroups(numel), max), max, true),
      },
    ],
    agents: mergeAgents,
    clear: io.branches,
  },
  {
    name: 'stats (the full statistics pass)',
    groups: statsGroups(numel),
    kernels: [{ kernel: await createStatsKernel(device, 'BF16', AGENTS) }],
    clear: io.counters,
  },
  {
    name: 'overlap_count (ramplus_tl counting pass)',
    groups: overlapCountGroups(numel),
    kernels: [{ kernel: await createOverlapCountKernel(device, 'BF16', AGENTS) }],
    clear: io.counters,
  },
];

/** The spec with each source that is the text of an --alt path replaced by its file's text; null where none is. */
function altSpec(spec: KernelSpec): KernelSpec | null {
  const pairs = values.alt
    .split(',')
    .filter(Boolean)
    .map((pair) => pair.split('=').map((path) => readFileSync(path, 'utf8')));
  const swapped = spec.sources.map((text) => pairs.find(([current]) => current === text));
  if (!swapped.some(Boolean)) return null;
  return { ...spec, sources: spec.sources.map((text, i) => swapped[i]?.[1] ?? text) };
}

/** The step named `name` again, its one kernel built from the --alt sources; null where they replace none of its. */
async function altStep(
  name: string,
  spec: KernelSpec,
  constants: Record<string, number>,
): Promise<Step | null> {
  const swapped = altSpec(spec);
  const step = steps.find((s) => s.name === name);
  const first = step?.kernels[0];
  if (!swapped || !step || !first) return null;
  const kernel = await createKernel(device, swapped, constants);
  return { ...step, name: `${name} (alt)`, kernels: [{ ...first, kernel }] };
}

const alts = [
  await altStep('ties merge, TIE_BREAK on, branch counts', TIES_KERNEL, {
    ...mergeConstants(variant),
    DARE: 0,
    TOP_K: 1,
    TIE_BREAK: 1,
    BAND: 0,
    CONSENSUS: 1,
    COUNT_BRANCHES: 1,
  }),
  await altStep('stats (the full statistics pass)', STATS_KERNEL, { IN_DTYPE: DTYPE_CODE.BF16, AGENTS }),
  await altStep('topk_count (threshold key guessed)', TOPK_COUNT_KERNEL, {
    IN_DTYPE: DTYPE_CODE.BF16,
    AGENTS,
    FIRST_ROW: 0,
    ROWS: AGENTS,
    COLLECT: 0,
  }),
].filter((step): step is Step => step !== null);
if (values.alt && alts.length === 0) throw new Error(`--alt ${values.alt} names no kernel's source`);
steps.push(...alts);

async function timed(step: Step): Promise<{ cpu: number; wall: number }> {
  const d = splitDispatch(step.groups, max);
  const windowParams: WindowParams = {
    count: numel,
    slotWords: slotBytes / 4,
    start: 0,
    groupsX: d.x,
    groups: d.groups,
  };
  device.queue.writeBuffer(params, 0, encodeParams({ ...windowParams, ...step.params }));
  if (step.agents) device.queue.writeBuffer(agentsBuffer, 0, step.agents);
  await device.queue.onSubmittedWorkDone();
  const cpu0 = process.cpuUsage();
  const wall0 = performance.now();
  const encoder = device.createCommandEncoder({ label: `KernelProfile.${step.name}` });
  if (step.clear) encoder.clearBuffer(step.clear);
  for (const k of step.kernels) k.kernel.encode(encoder, k.io ?? io, k.dispatch ?? d);
  device.queue.submit([encoder.finish()]);
  await device.queue.onSubmittedWorkDone();
  const cpu = process.cpuUsage(cpu0);
  return { cpu: (cpu.user + cpu.system) / 1e3, wall: performance.now() - wall0 };
}

const only = values.only.split('|');
const chosen = steps.filter((s, i) => i === 0 || only.some((part) => s.name.includes(part)));
const rows = chosen.map((s) => ({ step: s, cpu: [] as number[], wall: [] as number[] }));
for (let r = 0; r < repeats; r++)
  for (const row of rows) {
    const t = await timed(row.step);
    row.cpu.push(t.cpu);
    row.wall.push(t.wall);
  }
const best = (xs: number[]): number => Math.min(...xs);
const ram = best(at(rows, 0).cpu);
process.stdout.write(
  `\n${numel} bf16 elements, ${AGENTS} agents, TIES density ${density}, ${repeats} repeats ` +
    `(the least of them: the machine is shared)\n| kernel | CPU ms | wall ms | CPU ÷ RAM |\n|---|---|---|---|\n`,
);
for (const row of rows)
  process.stdout.write(
    `| ${row.step.name} | ${best(row.cpu).toFixed(0)} | ${best(row.wall).toFixed(0)} | ` +
      `${(best(row.cpu) / ram).toFixed(2)} |\n`,
  );
for (const b of [...Object.values(io), bracketBuffer, rangeBuffer, collected, chunks]) b.destroy();
engineDevice.destroy();
node.release();
