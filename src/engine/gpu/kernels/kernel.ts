// Builds one compute pipeline from a kernel's spec (WGSL sources, bindings written out, override
// constants) and encodes its dispatches; bind groups are cached per io object of buffers.

import type { FloatDtype } from '../../../format/dtype.ts';
import type { Dispatch } from '../plumbing.ts';

export type BindingType = 'uniform' | 'storage' | 'read-only-storage';

export interface BindingSpec {
  binding: number;
  /** The WGSL variable's name, also the key of the buffer in a KernelIo. */
  name: string;
  type: BindingType;
}

export interface KernelSpec {
  name: string;
  /** WGSL files concatenated in this order: shared helpers first, the kernel last. */
  sources: readonly string[];
  bindings: readonly BindingSpec[];
  /** The override constants the entry point uses, which every pipeline sets. */
  constants: readonly string[];
}

/**
 * One pipeline of a kernel: its spec and the value of each override constant. Nothing else tells two
 * pipelines apart, so the pipeline cache keys them by it alone (kernelKey).
 */
export interface KernelRequest {
  readonly spec: KernelSpec;
  readonly constants: Readonly<Record<string, number>>;
}

export type KernelIo = Readonly<Record<string, GPUBuffer>>;

export interface Kernel {
  readonly label: string;
  encode(encoder: GPUCommandEncoder, io: KernelIo, dispatch: Dispatch): void;
  destroy(): void;
}

/** DTYPE_* codes of shaders/common/codec.wgsl. */
export const DTYPE_CODE: Record<FloatDtype, number> = { F32: 0, BF16: 1, F16: 2 };

export function kernelSource(spec: KernelSpec): string {
  return spec.sources.join('\n');
}

function pascal(name: string): string {
  return name.replace(/(^|_)([a-z])/g, (_, __, c: string) => c.toUpperCase());
}

/** The pipeline a request names (createKernel). */
export function buildKernel(device: GPUDevice, request: KernelRequest): Promise<Kernel> {
  return createKernel(device, request.spec, request.constants);
}

export async function createKernel(
  device: GPUDevice,
  spec: KernelSpec,
  constants: Readonly<Record<string, number>>,
): Promise<Kernel> {
  const missing = spec.constants.filter((name) => constants[name] === undefined);
  const extra = Object.keys(constants).filter((name) => !spec.constants.includes(name));
  if (missing.length || extra.length) {
    throw new Error(
      `kernel ${spec.name}: constants missing [${missing.join(', ')}], unknown [${extra.join(', ')}]`,
    );
  }
  const variant = spec.constants.map((name) => `${name}=${constants[name]}`).join(',');
  const label = `${pascal(spec.name)}[${variant}]`;
  const layout = device.createBindGroupLayout({
    label: `${label}.bindGroupLayout`,
    entries: spec.bindings.map((b) => ({
      binding: b.binding,
      visibility: GPUShaderStage.COMPUTE,
      buffer: { type: b.type },
    })),
  });
  const module = device.createShaderModule({ label: `${label}.module`, code: kernelSource(spec) });
  const pipeline = await device.createComputePipelineAsync({
    label: `${label}.pipeline`,
    layout: device.createPipelineLayout({ label: `${label}.pipelineLayout`, bindGroupLayouts: [layout] }),
    compute: { module, entryPoint: 'main', constants: { ...constants } },
  });
  const bindGroups = new WeakMap<KernelIo, GPUBindGroup>();
  let destroyed = false;

  function bindGroup(io: KernelIo): GPUBindGroup {
    let group = bindGroups.get(io);
    if (!group) {
      group = device.createBindGroup({
        label: `${label}.bindGroup`,
        layout,
        entries: spec.bindings.map((b) => {
          const buffer = io[b.name];
          if (!buffer) throw new Error(`kernel ${spec.name}: no buffer for binding "${b.name}"`);
          return { binding: b.binding, resource: { buffer } };
        }),
      });
      bindGroups.set(io, group);
    }
    return group;
  }

  return {
    label,
    encode(encoder, io, dispatch) {
      if (destroyed) throw new Error(`kernel ${label} used after destroy()`);
      if (dispatch.groups === 0) return;
      const pass = encoder.beginComputePass({ label: `${label}.pass` });
      pass.setPipeline(pipeline);
      pass.setBindGroup(0, bindGroup(io));
      pass.dispatchWorkgroups(dispatch.x, dispatch.y);
      pass.end();
    },
    // Pipelines and layouts have no destroy() in WebGPU; dropping them lets them be collected.
    destroy() {
      destroyed = true;
    },
  };
}
