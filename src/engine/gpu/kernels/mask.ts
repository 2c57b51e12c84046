// Pipeline modules of the tensor view: shaders/mask.wgsl aggregates one tensor's per-element classes
// into a grid of blocks (CPU reference: referenceMask in src/methods/mask.ts), shaders/mask_draw.wgsl
// draws that grid into a canvas. Also the grid's geometry and layout, which both sides share.

import type { FloatDtype } from '../../../format/dtype.ts';
import source from '../../../../shaders/mask.wgsl?raw';
import drawSource from '../../../../shaders/mask_draw.wgsl?raw';
import type { ScalarType } from '../layout.ts';
import type { MaskGeometry } from '../../../methods/mask-geometry.ts';
import { buildKernel, DTYPE_CODE, type Kernel, type KernelRequest, type KernelSpec } from './kernel.ts';
import { FINITE_SOURCE, WINDOW_SOURCES } from './sources.ts';

/** Elements per invocation of the mask kernel (ITEMS in mask.wgsl). */
export const MASK_ITEMS = 16;

export const MASK_KERNEL: KernelSpec = {
  name: 'mask',
  // finite.wgsl for its bit-pattern scan of NaN and ±Inf (its flags binding stays unused here).
  sources: [...WINDOW_SOURCES, FINITE_SOURCE, source],
  bindings: [
    { binding: 0, name: 'params', type: 'uniform' },
    { binding: 1, name: 'inputs', type: 'read-only-storage' },
    { binding: 2, name: 'grid', type: 'storage' },
    { binding: 4, name: 'view', type: 'uniform' },
  ],
  constants: ['IN_DTYPE', 'AGENTS'],
};

export const MASK_DRAW_SOURCE: string = drawSource;

/** View members in declaration order (struct View of mask.wgsl), each one u32. */
export const VIEW_FIELDS: readonly { name: string; type: ScalarType }[] = [
  { name: 'tensor_cols', type: 'u32' },
  { name: 'row0', type: 'u32' },
  { name: 'col0', type: 'u32' },
  { name: 'rows', type: 'u32' },
  { name: 'cols', type: 'u32' },
  { name: 'block_rows', type: 'u32' },
  { name: 'block_cols', type: 'u32' },
  { name: 'grid_cols', type: 'u32' },
];

/** Draw members in declaration order (struct Draw of mask_draw.wgsl). */
export const DRAW_FIELDS: readonly { name: string; type: ScalarType }[] = [
  { name: 'width', type: 'f32' },
  { name: 'height', type: 'f32' },
  { name: 'grid_rows', type: 'u32' },
  { name: 'grid_cols', type: 'u32' },
  { name: 'rows', type: 'u32' },
  { name: 'cols', type: 'u32' },
  { name: 'block_rows', type: 'u32' },
  { name: 'block_cols', type: 'u32' },
];

/** Uniform sizes, rounded up to 16 bytes. */
export const VIEW_BYTES = Math.ceil((VIEW_FIELDS.length * 4) / 16) * 16;
export const DRAW_BYTES = Math.ceil((DRAW_FIELDS.length * 4) / 16) * 16;

function encodeFields(
  fields: readonly { name: string; type: ScalarType }[],
  bytes: number,
  values: Record<string, number>,
): Uint8Array {
  const out = new Uint8Array(bytes);
  const view = new DataView(out.buffer);
  fields.forEach((f, i) => {
    const value = values[f.name]!;
    if (f.type === 'f32') view.setFloat32(i * 4, value, true);
    else view.setUint32(i * 4, value >>> 0, true);
  });
  return out;
}

export function encodeView(g: MaskGeometry): Uint8Array {
  return encodeFields(VIEW_FIELDS, VIEW_BYTES, {
    tensor_cols: g.tensorCols,
    row0: g.row0,
    col0: g.col0,
    rows: g.rows,
    cols: g.cols,
    block_rows: g.blockRows,
    block_cols: g.blockCols,
    grid_cols: g.gridCols,
  });
}

export function encodeDraw(g: MaskGeometry, width: number, height: number): Uint8Array {
  return encodeFields(DRAW_FIELDS, DRAW_BYTES, {
    width,
    height,
    grid_rows: g.gridRows,
    grid_cols: g.gridCols,
    rows: g.rows,
    cols: g.cols,
    block_rows: g.blockRows,
    block_cols: g.blockCols,
  });
}

/** Its spec and override constants: all that tells its pipelines apart (KernelCache keys them). */
export function maskRequest(inDtype: FloatDtype, agents: number): KernelRequest {
  return { spec: MASK_KERNEL, constants: { IN_DTYPE: DTYPE_CODE[inDtype], AGENTS: agents } };
}

export function createMaskKernel(device: GPUDevice, inDtype: FloatDtype, agents: number): Promise<Kernel> {
  return buildKernel(device, maskRequest(inDtype, agents));
}

export interface MaskDrawIo {
  draw: GPUBuffer;
  grid: GPUBuffer;
  palette: GPUBuffer;
}

export interface MaskDraw {
  encode(encoder: GPUCommandEncoder, io: MaskDrawIo, target: GPUTextureView): void;
  destroy(): void;
}

/** The render pipeline that draws a grid into a canvas texture of `format`. */
export async function createMaskDraw(
  device: GPUDevice,
  format: GPUTextureFormat,
  agents: number,
): Promise<MaskDraw> {
  const label = `MaskDraw[AGENTS=${agents},${format}]`;
  const layout = device.createBindGroupLayout({
    label: `${label}.bindGroupLayout`,
    entries: [
      { binding: 0, visibility: GPUShaderStage.FRAGMENT, buffer: { type: 'uniform' } },
      { binding: 1, visibility: GPUShaderStage.FRAGMENT, buffer: { type: 'read-only-storage' } },
      { binding: 2, visibility: GPUShaderStage.FRAGMENT, buffer: { type: 'read-only-storage' } },
    ],
  });
  const module = device.createShaderModule({ label: `${label}.module`, code: drawSource });
  const pipeline = await device.createRenderPipelineAsync({
    label: `${label}.pipeline`,
    layout: device.createPipelineLayout({ label: `${label}.pipelineLayout`, bindGroupLayouts: [layout] }),
    vertex: { module, entryPoint: 'vs' },
    fragment: { module, entryPoint: 'fs', targets: [{ format }], constants: { AGENTS: agents } },
    primitive: { topology: 'triangle-list' },
  });
  let destroyed = false;
  return {
    encode(encoder, io, target) {
      if (destroyed) throw new Error(`${label} used after destroy()`);
      const group = device.createBindGroup({
        label: `${label}.bindGroup`,
        layout,
        entries: [
          { binding: 0, resource: { buffer: io.draw } },
          { binding: 1, resource: { buffer: io.grid } },
          { binding: 2, resource: { buffer: io.palette } },
        ],
      });
      const pass = encoder.beginRenderPass({
        label: `${label}.pass`,
        colorAttachments: [{ view: target, loadOp: 'clear', storeOp: 'store', clearValue: [1, 1, 1, 1] }],
      });
      pass.setPipeline(pipeline);
      pass.setBindGroup(0, group);
      pass.draw(3);
      pass.end();
    },
    // Pipelines have no destroy() in WebGPU; dropping them lets them be collected.
    destroy() {
      destroyed = true;
    },
  };
}
