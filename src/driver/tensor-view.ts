// The engine's side of the tensor view and the element inspector. MaskRenderer streams the windows
// of one tensor's viewed rows once through shaders/mask.wgsl into a grid of block counts, keeps the
// grid on the GPU to draw it into a canvas, and reads it back as exact integers. explainElement runs
// the engine's own merge of one tensor and keeps the bytes of one element, so the inspector shows
// what a merge writes, never a value re-derived beside it. Platform-free (worker, Node, tests).

import { checkCompatibility } from '../format/compat.ts';
import { decodeFloats, dtypeBits, type FloatDtype } from '../format/dtype.ts';
import type { Model } from '../format/model.ts';
import { taskVector } from '../methods/float32.ts';
import { ramLambdas, tensorLocalLambdas } from '../methods/stats.ts';
import { methodOf } from '../methods/registry/index.ts';
import type { MethodName, MethodParams } from '../methods/types.ts';
import { analyzeModels, mergeableTensors, tensorInput } from './driver.ts';
import { MergeError, type AnalysisResult } from './job.ts';
import { checkMergeOptions } from '../engine/contract.ts';
import { throwIfAborted } from '../io/abort.ts';
import { KernelCache } from '../engine/gpu/kernel-cache.ts';
import {
  createMaskDraw,
  encodeDraw,
  encodeView,
  MASK_ITEMS,
  maskRequest,
  VIEW_BYTES,
  DRAW_BYTES,
  type MaskDraw,
} from '../engine/gpu/kernels/mask.ts';
import { encodeParams, PARAMS_BYTES } from '../engine/gpu/layout.ts';
import {
  maskCanvasSize,
  maskGeometry,
  maskLayout,
  type MaskGeometry,
  type MaskView,
} from '../methods/mask-geometry.ts';
import {
  pad4,
  splitDispatch,
  tensorWindows,
  WORKGROUP_SIZE,
  windowElements,
} from '../engine/gpu/plumbing.ts';
import { Scheduler } from '../engine/gpu/scheduler.ts';
import { readSlots, windowParams } from '../engine/gpu/slot-reads.ts';
import type { MergeEngine } from '../engine/contract.ts';
import type { TensorInput } from '../methods/tensors.ts';

/** Elements per window of the mask pass: small enough to overlap reads with the GPU's work. */
export const MASK_WINDOW_ELEMENTS = 2 ** 22;

export interface MaskRequest {
  tensor: TensorInput;
  shape: readonly number[];
  /** null: the whole tensor. */
  view: MaskView | null;
  /** The grid's most blocks down and across (the canvas size in pixels). */
  maxRows: number;
  maxCols: number;
  epsilon: number;
  signal?: AbortSignal;
  /** Test aid: a smaller window forces many windows on small tensors. */
  windowElements?: number;
}

export interface MaskResult {
  geometry: MaskGeometry;
  /** Block counters, maskLayout(N).stride per block, row-major over the grid. */
  grid: Uint32Array;
  /** Elements read per model: the viewed rows, once. */
  elementsRead: number;
  windows: number;
  /** From the request to the grid being read back, in milliseconds. */
  computeMs: number;
}

/** RGBA in 0..1: unchanged, shared, sign conflict, non-finite, then agent colours (repeated for more agents). */
export type MaskPalette = readonly (readonly [number, number, number, number])[];

export class MaskRenderer {
  private readonly scheduler: Scheduler;
  private readonly kernels: KernelCache;
  private readonly draws = new Map<GPUTextureFormat, Promise<MaskDraw>>();
  private readonly params: GPUBuffer;
  private readonly view: GPUBuffer;
  private readonly drawUniform: GPUBuffer;
  private readonly palette: GPUBuffer;
  private inputs: GPUBuffer | null = null;
  private grid: GPUBuffer | null = null;
  private readback: GPUBuffer | null = null;
  private last: MaskGeometry | null = null;
  private destroyed = false;

  constructor(
    readonly device: GPUDevice,
    readonly agents: number,
  ) {
    this.scheduler = new Scheduler(device, 'MaskRenderer');
    this.kernels = new KernelCache(device);
    const uniform = GPUBufferUsage.UNIFORM | GPUBufferUsage.COPY_DST;
    this.params = this.buffer('params', PARAMS_BYTES, uniform);
    this.view = this.buffer('view', VIEW_BYTES, uniform);
    this.drawUniform = this.buffer('draw', DRAW_BYTES, uniform);
    this.palette = this.buffer(
      'palette',
      (agents + 4) * 16,
      GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_DST,
    );
  }

  /** One pass over the viewed rows' windows: the grid of block counts, kept for draw() and read back. */
  async compute(request: MaskRequest): Promise<MaskResult> {
    if (this.destroyed) throw new Error('this mask renderer has been destroyed');
    this.scheduler.check();
    const started = performance.now();
    const { tensor } = request;
    if (tensor.numel >= 2 ** 32)
      throw new MergeError(
        `${tensor.name} has ${tensor.numel} elements; the tensor view draws tensors under 2^32 elements.`,
        tensor.name,
      );
    const g = maskGeometry(request.shape, request.view, request.maxRows, request.maxCols);
    const stride = maskLayout(this.agents).stride;
    const gridBytes = g.gridRows * g.gridCols * stride * 4;
    const inBytes = dtypeBits(tensor.dtype) / 8;
    const limits = this.device.limits;
    const size = windowElements({
      agents: this.agents,
      inBytes,
      outBytes: 4,
      // The mask kernel ranks no ties.
      tieRows: 0,
      maxStorageBufferBindingSize: limits.maxStorageBufferBindingSize,
      maxBufferSize: limits.maxBufferSize,
      maxComputeWorkgroupsPerDimension: limits.maxComputeWorkgroupsPerDimension,
      maxWindowElements: request.windowElements ?? MASK_WINDOW_ELEMENTS,
    });
    // Whole rows of the view: the one contiguous element range that holds it.
    const first = g.row0 * g.tensorCols;
    const count = g.rows * g.tensorCols;
    const windowSize = Math.min(size, count);
    const slotBytes = pad4(windowSize * inBytes);
    this.inputs = this.grow(this.inputs, 'inputs', (this.agents + 1) * slotBytes, GPUBufferUsage.STORAGE);
    this.grid = this.grow(this.grid, 'grid', gridBytes, GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_SRC);
    this.readback = this.grow(this.readback, 'readback', gridBytes, GPUBufferUsage.MAP_READ);
    const kernel = await this.kernels.get(maskRequest(tensor.dtype, this.agents));
    const staging = new Uint8Array((this.agents + 1) * slotBytes);
    const grid = this.grid;
    const io = { params: this.params, inputs: this.inputs, grid, view: this.view };
    this.scheduler.write(this.view, 0, encodeView(g));
    this.scheduler.submit('mask.clear', (encoder) => encoder.clearBuffer(grid, 0, pad4(gridBytes)));
    const windows = tensorWindows(count, windowSize);
    const models = Array.from({ length: this.agents + 1 }, (_, k) => k);
    for (const w of windows) {
      throwIfAborted(request.signal);
      // Each slot zero-filled past the window's bytes to its end.
      await readSlots(tensor, models, first + w.start, w.count, staging, slotBytes, slotBytes);
      this.scheduler.write(this.inputs, 0, staging);
      const d = splitDispatch(
        Math.ceil(w.count / (WORKGROUP_SIZE * MASK_ITEMS)),
        limits.maxComputeWorkgroupsPerDimension,
      );
      // writeBuffer and submit are ordered on the queue, so one set of buffers serves every window.
      this.scheduler.write(
        this.params,
        0,
        encodeParams({ ...windowParams(w, slotBytes, d, first), epsilon: request.epsilon }),
      );
      this.scheduler.submit(`mask[${w.index}]`, (encoder) => kernel.encode(encoder, io, d));
    }
    const readback = this.readback;
    this.scheduler.submit('mask.readback', (encoder) =>
      encoder.copyBufferToBuffer(grid, 0, readback, 0, pad4(gridBytes)),
    );
    const bytes = await this.scheduler.read(readback, pad4(gridBytes));
    this.last = g;
    return {
      geometry: g,
      grid: new Uint32Array(bytes.buffer, 0, gridBytes / 4),
      elementsRead: count,
      windows: windows.length,
      computeMs: performance.now() - started,
    };
  }

  /** Draws the last computed grid into a texture (a canvas's current one, or any render target). */
  async draw(texture: GPUTexture, palette: MaskPalette): Promise<void> {
    const g = this.last;
    if (!g || !this.grid) return;
    if (palette.length < 5)
      throw new RangeError(`the palette needs at least 5 colours, not ${palette.length}`);
    // Agent colours repeat when there are more agents than colours.
    const agentColours = palette.slice(4);
    const colours = Float32Array.from(
      [
        ...palette.slice(0, 4),
        ...Array.from({ length: this.agents }, (_, t) => agentColours[t % agentColours.length]!),
      ].flat(),
    );
    let draw = this.draws.get(texture.format);
    if (!draw) {
      draw = createMaskDraw(this.device, texture.format, this.agents);
      this.draws.set(texture.format, draw);
    }
    const pipeline = await draw;
    this.scheduler.write(this.drawUniform, 0, encodeDraw(g, texture.width, texture.height));
    this.scheduler.write(this.palette, 0, new Uint8Array(colours.buffer));
    const grid = this.grid;
    this.scheduler.submit('mask.draw', (encoder) =>
      pipeline.encode(encoder, { draw: this.drawUniform, grid, palette: this.palette }, texture.createView()),
    );
    await this.scheduler.idle();
  }

  /**
   * Draws the last grid into a width × height RGBA texture and reads its pixels back (row-major, 4
   * bytes each): what a 2D canvas shows, and what tests compare.
   */
  async drawPixels(width: number, height: number, palette: MaskPalette): Promise<Uint8Array> {
    const rowBytes = Math.ceil((width * 4) / 256) * 256;
    const texture = this.device.createTexture({
      label: 'MaskRenderer.pixels',
      size: [width, height],
      format: 'rgba8unorm',
      usage: GPUTextureUsage.RENDER_ATTACHMENT | GPUTextureUsage.COPY_SRC,
    });
    const readback = this.buffer(
      'pixelReadback',
      rowBytes * height,
      GPUBufferUsage.MAP_READ | GPUBufferUsage.COPY_DST,
    );
    try {
      await this.draw(texture, palette);
      this.scheduler.submit('mask.pixels', (encoder) =>
        encoder.copyTextureToBuffer({ texture }, { buffer: readback, bytesPerRow: rowBytes }, [
          width,
          height,
        ]),
      );
      const bytes = await this.scheduler.read(readback, rowBytes * height);
      const pixels = new Uint8Array(width * height * 4);
      for (let y = 0; y < height; y++)
        pixels.set(bytes.subarray(y * rowBytes, y * rowBytes + width * 4), y * width * 4);
      return pixels;
    } finally {
      texture.destroy();
      readback.destroy();
    }
  }

  destroy(): void {
    if (this.destroyed) return;
    this.destroyed = true;
    for (const b of [
      this.params,
      this.view,
      this.drawUniform,
      this.palette,
      this.inputs,
      this.grid,
      this.readback,
    ])
      b?.destroy();
    this.kernels.destroy();
    for (const d of this.draws.values())
      d.then(
        (draw) => draw.destroy(),
        () => undefined,
      );
    this.scheduler.destroy();
  }

  /** The buffer if it holds `bytes`, else a new one (the old destroyed). */
  private grow(buffer: GPUBuffer | null, name: string, bytes: number, usage: GPUBufferUsageFlags): GPUBuffer {
    if (buffer && buffer.size >= pad4(bytes)) return buffer;
    buffer?.destroy();
    return this.buffer(name, bytes, usage | GPUBufferUsage.COPY_DST);
  }

  private buffer(name: string, size: number, usage: GPUBufferUsageFlags): GPUBuffer {
    return this.device.createBuffer({ label: `MaskRenderer.${name}`, size: Math.max(4, pad4(size)), usage });
  }
}

/** One element of one tensor, explained: the inspector's `data-json`. */
export interface ElementExplanation {
  tensor: string;
  index: number;
  method: MethodName;
  base: number;
  agents: { value: number; tau: number; changed: boolean }[];
  contributors: number;
  lambda: number[];
  merged: number;
  /** The dtype the merged value was written in. */
  outDtype: FloatDtype;
}

export interface ExplainRequest {
  base: Model;
  agents: Model[];
  engine: MergeEngine;
  params: MethodParams;
  /** undefined keeps the tensor's dtype, as a merge does. */
  outDtype?: FloatDtype;
  tensor: string;
  index: number;
  /** Cached statistics with the params' ε; computed when RAM+ needs them and they are absent. */
  analysis?: AnalysisResult;
  signal?: AbortSignal;
}

/** The merged tensors' names, in the base's order, for the models as given. */
export function mergedTensorNames(base: Model, agents: Model[]): string[] {
  return mergeableTensors(base, checkCompatibility(base, agents)).map((t) => t.name);
}

/** Decoded stored values of one element in the base (0) and each agent (1..N). */
async function elementValues(input: TensorInput, index: number, models: number): Promise<number[]> {
  const size = dtypeBits(input.dtype) / 8;
  const bytes = new Uint8Array(size);
  const values: number[] = [];
  for (let k = 0; k < models; k++) {
    await input.read(k, index, 1, bytes);
    values.push(decodeFloats(input.dtype, bytes, 1)[0]!);
  }
  return values;
}

/** Explains element `index` of a merged tensor with the engine's merge of that whole tensor. */
export async function explainElement(request: ExplainRequest): Promise<ElementExplanation> {
  const { base, agents, engine, params, tensor: name, index } = request;
  const tensors = mergeableTensors(base, checkCompatibility(base, agents));
  const spec = tensors.find((t) => t.name === name);
  if (!spec)
    throw new MergeError(
      base.tensors.has(name)
        ? `${name} is not merged (it is copied from the base, or differs between the models), so there is no element to explain.`
        : `${base.name} has no tensor ${name}.`,
      name,
    );
  const input = tensorInput([base, ...agents], name);
  if (!Number.isSafeInteger(index) || index < 0 || index >= input.numel)
    throw new MergeError(
      `element ${index} is outside ${name}, which has ${input.numel} elements (0 to ${input.numel - 1}).`,
      name,
    );
  const [baseValue, ...agentValues] = await elementValues(input, index, agents.length + 1);
  const epsilon = Math.fround(params.epsilon);
  const explained = agentValues.map((value) => {
    const tau = taskVector(value, baseValue!);
    return { value, tau, changed: Math.abs(tau) > epsilon };
  });

  const { plan } = methodOf(params.method);
  let lambdas = agents.map(() => 1);
  if (plan.lambdas === 'global') {
    const analysis =
      request.analysis ??
      (await analyzeModels({ base, agents, engine, epsilon: params.epsilon, signal: request.signal }));
    lambdas = ramLambdas(analysis.totals, params.method, params.r, params.alpha);
  }
  const outDtype = request.outDtype ?? input.dtype;
  const outBytes = dtypeBits(outDtype) / 8;
  const wanted = index * outBytes;
  const element = new Uint8Array(outBytes);
  let at = 0;
  await engine.merge(input, {
    params,
    lambdas,
    outDtype,
    signal: request.signal,
    emit: async (bytes) => {
      // Only the requested element's bytes are kept; the rest of the tensor passes by.
      if (wanted >= at && wanted < at + bytes.length)
        element.set(bytes.subarray(wanted - at, wanted - at + outBytes));
      at += bytes.length;
    },
  });
  let lambda: number[];
  if (plan.lambdas === 'tensor')
    lambda = tensorLocalLambdas(
      await engine.analyze(input, params.epsilon, request.signal),
      params.r,
      params.alpha,
      params.epsilon,
    );
  else if (plan.combine === 'ram')
    lambda = checkMergeOptions({ params, lambdas, outDtype, emit: async () => {} }, agents.length);
  else if (plan.combine === 'linear') lambda = agents.map(() => 1);
  else lambda = agents.map(() => params.lambda);
  return {
    tensor: name,
    index,
    method: params.method,
    base: baseValue!,
    agents: explained,
    contributors: explained.filter((a) => a.changed).length,
    lambda,
    merged: decodeFloats(outDtype, element, 1)[0]!,
    outDtype,
  };
}

/** The worker's tensor-view call: models by slot, the tensor, the view and the canvas's size and colours. */
export interface MaskViewCall {
  base: string;
  agents: string[];
  tensor: string;
  epsilon: number;
  view: MaskView | null;
  maxRows: number;
  maxCols: number;
  palette: MaskPalette;
}

export interface MaskViewResult extends MaskResult {
  tensor: string;
  dtype: FloatDtype;
  shape: number[];
  agents: number;
  /** Elements per attention head (config head_dim, else hidden_size / num_attention_heads); null when unknown. */
  headDim: number | null;
  /** Whether a canvas was attached and drawn into. */
  drawn: boolean;
  /** Drawing the grid into the canvas, until the GPU finished, in milliseconds. */
  drawMs: number;
}

export interface ExplainCall {
  base: string;
  agents: string[];
  params: MethodParams;
  outDtype?: FloatDtype;
  tensor: string;
  index: number;
}

function headDim(config: Record<string, unknown> | undefined): number | null {
  const number = (key: string): number | null =>
    typeof config?.[key] === 'number' && Number.isInteger(config[key]) && config[key] > 0
      ? config[key]
      : null;
  const explicit = number('head_dim');
  if (explicit !== null) return explicit;
  const hidden = number('hidden_size');
  const heads = number('num_attention_heads');
  return hidden !== null && heads !== null && hidden % heads === 0 ? hidden / heads : null;
}

/**
 * The worker's tensor-view state: the canvas the page handed over (drawn on the engine's device, so
 * no weight byte and no GPU object ever reaches the page) and a renderer per device and agent count.
 */
export class InspectHost {
  private canvas: OffscreenCanvas | null = null;
  private context: OffscreenCanvasRenderingContext2D | null = null;
  private renderer: MaskRenderer | null = null;

  attach(canvas: OffscreenCanvas): void {
    this.canvas = canvas;
    this.context = null;
  }

  async maskView(
    device: GPUDevice,
    base: Model,
    agents: Model[],
    call: MaskViewCall,
    signal?: AbortSignal,
  ): Promise<MaskViewResult> {
    if (!mergedTensorNames(base, agents).includes(call.tensor))
      throw new MergeError(
        base.tensors.has(call.tensor)
          ? `${call.tensor} is not merged (it is copied from the base, or differs between the models), so it has no mask.`
          : `${base.name} has no tensor ${call.tensor}.`,
        call.tensor,
      );
    if (this.renderer?.device !== device || this.renderer.agents !== agents.length) {
      this.renderer?.destroy();
      this.renderer = new MaskRenderer(device, agents.length);
    }
    const input = tensorInput([base, ...agents], call.tensor);
    const shape = [...base.tensors.get(call.tensor)!.shape];
    const result = await this.renderer.compute({
      tensor: input,
      shape,
      view: call.view,
      maxRows: call.maxRows,
      maxCols: call.maxCols,
      epsilon: call.epsilon,
      signal,
    });
    const started = performance.now();
    let drawn = false;
    if (this.canvas) {
      // Rendered on the GPU into a texture, then put into the canvas as pixels: a WebGPU-configured
      // OffscreenCanvas lost the device on headless Chromium's SwiftShader, a 2D one works everywhere.
      this.context ??= this.canvas.getContext('2d');
      if (!this.context) throw new Error('The tensor view canvas offers no 2D context.');
      // The canvas takes the view's aspect, so a 64 × 256 tensor is drawn four times wider than tall.
      const { width, height } = maskCanvasSize(result.geometry, Math.max(call.maxRows, call.maxCols));
      if (this.canvas.width !== width) this.canvas.width = width;
      if (this.canvas.height !== height) this.canvas.height = height;
      const pixels = await this.renderer.drawPixels(width, height, call.palette);
      this.context.putImageData(
        new ImageData(new Uint8ClampedArray(pixels.buffer as ArrayBuffer), width, height),
        0,
        0,
      );
      drawn = true;
    }
    return {
      ...result,
      tensor: call.tensor,
      dtype: input.dtype,
      shape,
      agents: agents.length,
      headDim: headDim(base.config),
      drawn,
      drawMs: performance.now() - started,
    };
  }

  destroy(): void {
    this.renderer?.destroy();
    this.renderer = null;
  }
}
