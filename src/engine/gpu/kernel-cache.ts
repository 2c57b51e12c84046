// The pipelines an engine has built, keyed by what tells them apart: the kernel's spec and the value
// of each override constant (the dtypes among them). The key is built here alone, from the request
// the kernel module hands out (kernels/*.ts), never by hand at a call site: a key that forgot one
// constant would hand one variant's pipeline to another.

import { buildKernel, type Kernel, type KernelRequest } from './kernels/kernel.ts';

/**
 * The cache key of a request: the spec's name, then every constant as [name, value], in name order
 * (so the order a request lists them in does not matter). JSON: no name or value can run into the next.
 */
export function kernelKey(request: KernelRequest): string {
  const constants = Object.entries(request.constants).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  for (const [name, value] of constants)
    if (!Number.isFinite(value))
      throw new RangeError(`kernel ${request.spec.name}: constant ${name} is ${value}, not a number`);
  return JSON.stringify([request.spec.name, constants]);
}

interface Entry {
  request: KernelRequest;
  kernel: Promise<Kernel>;
}

export class KernelCache {
  private readonly entries = new Map<string, Entry>();

  /** `build`: makes the pipeline of a request not cached yet (a test seam; default buildKernel). */
  constructor(
    private readonly device: GPUDevice,
    private readonly build: (device: GPUDevice, request: KernelRequest) => Promise<Kernel> = buildKernel,
  ) {}

  /** The pipeline of a request: built on first use, shared by every request with the same key. */
  get(request: KernelRequest): Promise<Kernel> {
    const key = kernelKey(request);
    const entry = this.entries.get(key);
    if (entry) {
      // Two specs of one name would share pipelines built from either's WGSL.
      if (entry.request.spec !== request.spec)
        throw new Error(`two kernel specs are named ${request.spec.name}; each needs its own name`);
      return entry.kernel;
    }
    const kernel = this.build(this.device, request);
    this.entries.set(key, { request, kernel });
    // A failed build is not cached: the next request reports its own error.
    kernel.catch(() => {
      if (this.entries.get(key)?.kernel === kernel) this.entries.delete(key);
    });
    return kernel;
  }

  /** How many pipelines are cached or being built. */
  get size(): number {
    return this.entries.size;
  }

  /** Lets go of every pipeline (each one's destroy()); the cache can be used again after. */
  destroy(): void {
    for (const { kernel } of this.entries.values())
      kernel.then(
        (k) => k.destroy(),
        () => undefined,
      );
    this.entries.clear();
  }
}
