import { describe, expect, it } from 'vitest';
import type { FloatDtype } from '../../format/dtype.ts';
import { KernelCache, kernelKey } from './kernel-cache.ts';
import type { Kernel, KernelRequest, KernelSpec } from './kernels/kernel.ts';
import { tiesRequest, TIES_KERNEL } from './kernels/ties.ts';
import { topKCountRequest } from './kernels/topk_count.ts';
import { topKTiesRequest } from './kernels/topk_ties.ts';
import { statsRequest } from './kernels/stats.ts';
import { overlapCountRequest } from './kernels/overlap_count.ts';

const DTYPES: FloatDtype[] = ['F32', 'BF16', 'F16'];
const BOOLS = [false, true];

/** Every TIES-kernel variant the engine can ask for: all option and dtype combinations. */
function tiesVariants(): KernelRequest[] {
  const requests: KernelRequest[] = [];
  for (const inDtype of DTYPES)
    for (const outDtype of DTYPES)
      for (const correctDivision of BOOLS)
        for (const dare of BOOLS)
          for (const topK of BOOLS)
            for (const tieBreak of BOOLS)
              for (const band of BOOLS)
                for (const consensus of BOOLS)
                  for (const countBranches of BOOLS)
                    requests.push(
                      tiesRequest(
                        { inDtype, outDtype, agents: 3, correctDivision },
                        { dare, topK, tieBreak, band, consensus, countBranches },
                      ),
                    );
  return requests;
}

/** A stand-in pipeline: the cache never looks inside one. */
function fakeKernel(label: string): Kernel & { destroyed: boolean } {
  return {
    label,
    destroyed: false,
    encode() {},
    destroy() {
      this.destroyed = true;
    },
  };
}

const device = {} as GPUDevice;

describe('kernelKey', () => {
  it('gives every distinct constant set of a spec its own key', () => {
    const requests = tiesVariants();
    const keys = new Set(requests.map(kernelKey));
    const constantSets = new Set(
      requests.map((r) => TIES_KERNEL.constants.map((name) => r.constants[name]).join(',')),
    );
    expect(constantSets.size).toBe(3 * 3 * 2 ** 7);
    expect(keys.size).toBe(constantSets.size);
  });

  it('tells apart requests that differ in one constant only, in either direction', () => {
    const base = topKCountRequest('BF16', 4, 0, 4, false);
    for (const name of Object.keys(base.constants)) {
      const changed = { ...base, constants: { ...base.constants, [name]: base.constants[name]! + 1 } };
      expect(kernelKey(changed), name).not.toBe(kernelKey(base));
    }
    // Constants that a hand-joined key would run together: FIRST_ROW 1, ROWS 12 against 11, 2.
    expect(kernelKey(topKCountRequest('F32', 2, 1, 12, true))).not.toBe(
      kernelKey(topKCountRequest('F32', 2, 11, 2, true)),
    );
    expect(kernelKey(topKTiesRequest('F16', 2, true))).not.toBe(
      kernelKey(topKTiesRequest('F16', 2, true, 1)),
    );
  });

  it('tells apart kernels of different specs with the same constants', () => {
    expect(kernelKey(statsRequest('F32', 2))).not.toBe(kernelKey(overlapCountRequest('F32', 2)));
  });

  it('gives equal constant sets one key, whatever order they are listed in', () => {
    const a = tiesRequest(
      { inDtype: 'BF16', outDtype: 'F32', agents: 5, correctDivision: true },
      { dare: true, tieBreak: false },
    );
    const reversed = Object.fromEntries(Object.entries(a.constants).reverse());
    expect(Object.keys(reversed)).not.toEqual(Object.keys(a.constants));
    expect(kernelKey({ spec: a.spec, constants: reversed })).toBe(kernelKey(a));
    expect(
      kernelKey(
        tiesRequest(
          { inDtype: 'BF16', outDtype: 'F32', agents: 5, correctDivision: true },
          { dare: true, tieBreak: false },
        ),
      ),
    ).toBe(kernelKey(a));
  });

  it('refuses a constant that is not a number', () => {
    const r = statsRequest('F32', 2);
    expect(() => kernelKey({ spec: r.spec, constants: { ...r.constants, AGENTS: NaN } })).toThrow(
      /stats: constant AGENTS is NaN/,
    );
  });
});

describe('KernelCache', () => {
  it('builds each distinct request once and shares it with equal ones', async () => {
    const built: KernelRequest[] = [];
    const cache = new KernelCache(device, (_d, request) => {
      built.push(request);
      return Promise.resolve(fakeKernel(kernelKey(request)));
    });
    const requests = tiesVariants();
    const first = await Promise.all(requests.map((r) => cache.get(r)));
    const again = await Promise.all(requests.map((r) => cache.get({ ...r, constants: { ...r.constants } })));
    expect(built).toHaveLength(requests.length);
    expect(cache.size).toBe(requests.length);
    expect(new Set(first).size).toBe(requests.length);
    again.forEach((k, i) => expect(k).toBe(first[i]));
    first.forEach((k, i) => expect(k.label).toBe(kernelKey(requests[i]!)));
  });

  it('does not keep a failed build, and destroys what it built', async () => {
    let calls = 0;
    const made: ReturnType<typeof fakeKernel>[] = [];
    const cache = new KernelCache(device, () => {
      calls++;
      if (calls === 1) return Promise.reject(new Error('bad WGSL'));
      const k = fakeKernel(`k${calls}`);
      made.push(k);
      return Promise.resolve(k);
    });
    const r = statsRequest('BF16', 3);
    await expect(cache.get(r)).rejects.toThrow('bad WGSL');
    await Promise.resolve();
    expect(cache.size).toBe(0);
    const k = await cache.get(r);
    expect(calls).toBe(2);
    cache.destroy();
    await Promise.resolve();
    expect(k).toBe(made[0]);
    expect(made[0]!.destroyed).toBe(true);
    expect(cache.size).toBe(0);
  });

  it('refuses a second spec under a name already cached', () => {
    const cache = new KernelCache(device, (_d, r) => Promise.resolve(fakeKernel(r.spec.name)));
    const r = statsRequest('F32', 2);
    void cache.get(r);
    const impostor: KernelSpec = { ...r.spec };
    expect(() => cache.get({ spec: impostor, constants: r.constants })).toThrow(
      /two kernel specs are named stats/,
    );
  });
});
