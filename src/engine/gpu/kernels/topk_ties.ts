// Pipeline module of shaders/topk_ties.wgsl: per block of TIE_BLOCK_PAIRS element pairs, the elements
// tied at each agent's TIES threshold (the CPU engine counts them in index order; reference: topKTaus).

import type { FloatDtype } from '../../../format/dtype.ts';
import source from '../../../../shaders/topk_ties.wgsl?raw';
import { splitDispatch, TIE_BLOCK_PAIRS, WORKGROUP_SIZE, type Dispatch } from '../plumbing.ts';
import { buildKernel, DTYPE_CODE, type Kernel, type KernelRequest, type KernelSpec } from './kernel.ts';
import { WINDOW_SOURCES } from './sources.ts';

export const TOPK_TIES_KERNEL: KernelSpec = {
  name: 'topk_ties',
  sources: [...WINDOW_SOURCES, source],
  bindings: [
    { binding: 0, name: 'params', type: 'uniform' },
    { binding: 1, name: 'inputs', type: 'read-only-storage' },
    { binding: 2, name: 'tie_counts', type: 'storage' },
    { binding: 3, name: 'agents', type: 'read-only-storage' },
  ],
  constants: ['IN_DTYPE', 'AGENTS', 'BAND', 'SPAN_ROW'],
};

/** SPAN_ROW of the dispatch over a whole window (every agent without a span). */
export const NO_SPAN_ROW = 0xffffffff;

/**
 * `band`: also count the ties at each agent's outlier threshold (Model Breadcrumbs). `spanRow`: mark
 * that agent's ties in its span alone (AgentParams.tieFirst), dispatched with spanMarkDispatch.
 */
export function topKTiesRequest(
  inDtype: FloatDtype,
  agents: number,
  band = false,
  spanRow = NO_SPAN_ROW,
): KernelRequest {
  return {
    spec: TOPK_TIES_KERNEL,
    constants: {
      IN_DTYPE: DTYPE_CODE[inDtype],
      AGENTS: agents,
      BAND: band ? 1 : 0,
      SPAN_ROW: spanRow,
    },
  };
}

export function createTopKTiesKernel(
  device: GPUDevice,
  inDtype: FloatDtype,
  agents: number,
  band = false,
  spanRow = NO_SPAN_ROW,
): Promise<Kernel> {
  return buildKernel(device, topKTiesRequest(inDtype, agents, band, spanRow));
}

/** The dispatch of a span's marks (SPAN_ROW): one invocation per tie block of `elements`. */
export function spanMarkDispatch(elements: number, maxPerDimension: number): Dispatch {
  return splitDispatch(Math.ceil(elements / (2 * TIE_BLOCK_PAIRS) / WORKGROUP_SIZE), maxPerDimension);
}

/**
 * The dispatch of topk_ties beside a merge dispatch: one invocation per tie block of the merge's
 * workgroups, so TIE_BLOCK_PAIRS times fewer workgroups (the kernel reads their grid's width itself).
 */
export function tieMarkDispatch(merge: Dispatch, maxPerDimension: number): Dispatch {
  return splitDispatch(Math.ceil(merge.groups / TIE_BLOCK_PAIRS), maxPerDimension);
}
