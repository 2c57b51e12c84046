// Pipeline module of shaders/topk_count.wgsl: per top-k row and the bracket [lo, hi] a sample put its
// threshold in, the keys above hi, equal to hi and to lo, and the keys between them collected
// (src/engine/gpu/topk-select.ts reads them).

import type { FloatDtype } from '../../../format/dtype.ts';
import source from '../../../../shaders/topk_count.wgsl?raw';
import { WORKGROUP_SIZE } from '../plumbing.ts';
import { buildKernel, DTYPE_CODE, type Kernel, type KernelRequest, type KernelSpec } from './kernel.ts';
import { LAYOUT_SOURCES } from './sources.ts';

export const TOPK_COUNT_KERNEL: KernelSpec = {
  name: 'topk_count',
  sources: [...LAYOUT_SOURCES, source],
  bindings: [
    { binding: 0, name: 'params', type: 'uniform' },
    { binding: 1, name: 'inputs', type: 'read-only-storage' },
    { binding: 2, name: 'histogram', type: 'storage' },
    { binding: 3, name: 'collected', type: 'storage' },
    { binding: 4, name: 'bracket', type: 'read-only-storage' },
    { binding: 5, name: 'chunks', type: 'storage' },
  ],
  constants: ['IN_DTYPE', 'AGENTS', 'FIRST_ROW', 'ROWS', 'COLLECT'],
};

/** Counters per row (COUNTS): above hi, equal to hi, equal to lo, between (collected). */
export const BRACKET_COUNTS = 4;

/** Words of the bracket buffer before its rows' (hi, lo): the collected keys' room per row, the chunks. */
export const BRACKET_HEADER = 2;

/** vec4 words of 16-bit inputs per invocation (QUADS in topk_count.wgsl): 64 keys. */
export const COUNT_QUADS = 8;

/** Elements of one chunk: what one workgroup counts, whose ties the pass reports apart. */
export const CHUNK_ELEMENTS = 8 * COUNT_QUADS * WORKGROUP_SIZE;

export function bracketGroups(count: number): number {
  return Math.ceil(count / CHUNK_ELEMENTS);
}

/**
 * `collect`: some row of the dispatch brackets several keys (lo below hi), so the kernel also counts
 * keys equal to lo and collects those between; else it runs the cheaper one-key count.
 */
export function topKCountRequest(
  inDtype: FloatDtype,
  agents: number,
  firstRow: number,
  rows: number,
  collect: boolean,
): KernelRequest {
  return {
    spec: TOPK_COUNT_KERNEL,
    constants: {
      IN_DTYPE: DTYPE_CODE[inDtype],
      AGENTS: agents,
      FIRST_ROW: firstRow,
      ROWS: rows,
      COLLECT: collect ? 1 : 0,
    },
  };
}

export function createTopKCountKernel(
  device: GPUDevice,
  inDtype: FloatDtype,
  agents: number,
  firstRow: number,
  rows: number,
  collect: boolean,
): Promise<Kernel> {
  return buildKernel(device, topKCountRequest(inDtype, agents, firstRow, rows, collect));
}
