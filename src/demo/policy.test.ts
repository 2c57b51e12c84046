import { describe, expect, it } from 'vitest';
import { bf16ToF32, f32ToBf16 } from '../format/dtype.ts';
import { at, atF32, atF64, must } from '../io/checked.ts';
import { loadDemoWeights } from './arena.ts';
import {
  argmax,
  initParams,
  parameterCount,
  Policy,
  policyConfigFromJson,
  roundParamsToBf16,
  softmax,
  tensorSpecs,
  toBf16Tensors,
  toConfigJson,
  type PolicyConfig,
} from './policy.ts';

const small: PolicyConfig = { obsSize: 10, hiddenSizes: [6, 5], numActions: 3, tasks: ['a', 'b'] };

function tensor<T>(params: ReadonlyMap<string, T>, name: string): T {
  return must(params.get(name), `tensor ${name}`);
}

/** The same network written densely over a 0/1 input, in f64, as a reference. */
function denseForward(
  params: Map<string, Float32Array>,
  config: PolicyConfig,
  x: number[],
  task: number,
): number[] {
  const [h0Size, h1Size] = config.hiddenSizes as [number, number];
  const w0 = tensor(params, 'layers.0.weight');
  const b0 = tensor(params, 'layers.0.bias');
  const e = tensor(params, 'task_embed.weight');
  const h0 = Array.from({ length: h0Size }, (_, j) => {
    let acc = atF32(b0, j) + atF32(e, task * h0Size + j);
    x.forEach((xi, i) => (acc += atF32(w0, j * config.obsSize + i) * xi));
    return Math.max(acc, 0);
  });
  const w1 = tensor(params, 'layers.1.weight');
  const b1 = tensor(params, 'layers.1.bias');
  const h1 = Array.from({ length: h1Size }, (_, j) =>
    Math.max(
      h0.reduce((acc, h, k) => acc + atF32(w1, j * h0Size + k) * h, atF32(b1, j)),
      0,
    ),
  );
  const wh = tensor(params, 'head.weight');
  const bh = tensor(params, 'head.bias');
  return Array.from({ length: config.numActions }, (_, a) =>
    h1.reduce((acc, h, k) => acc + atF32(wh, a * h1Size + k) * h, atF32(bh, a)),
  );
}

describe('policy tensors', () => {
  it('names and shapes the tensors like a PyTorch checkpoint ([out, in] weights)', () => {
    expect(tensorSpecs(small)).toEqual([
      { name: 'task_embed.weight', shape: [2, 6] },
      { name: 'layers.0.weight', shape: [6, 10] },
      { name: 'layers.0.bias', shape: [6] },
      { name: 'layers.1.weight', shape: [5, 6] },
      { name: 'layers.1.bias', shape: [5] },
      { name: 'head.weight', shape: [3, 5] },
      { name: 'head.bias', shape: [3] },
    ]);
    expect(parameterCount(small)).toBe(12 + 60 + 6 + 30 + 5 + 15 + 3);
  });

  it('initialises deterministically, linear layers within ±1/√fan_in', () => {
    const a = initParams(small, 1);
    expect(initParams(small, 1)).toEqual(a);
    expect(initParams(small, 2).get('layers.0.weight')).not.toEqual(a.get('layers.0.weight'));
    for (const v of tensor(a, 'layers.1.weight')) expect(Math.abs(v)).toBeLessThanOrEqual(1 / Math.sqrt(6));
    const embed = tensor(
      initParams({ ...small, tasks: Array.from({ length: 200 }, (_, i) => `t${i}`) }, 3),
      'task_embed.weight',
    );
    const mean = embed.reduce((s, v) => s + v, 0) / embed.length;
    const variance = embed.reduce((s, v) => s + (v - mean) ** 2, 0) / embed.length;
    expect(Math.abs(mean)).toBeLessThan(0.1);
    expect(variance).toBeGreaterThan(0.85);
    expect(variance).toBeLessThan(1.15);
  });
});

describe('Policy', () => {
  const params = initParams(small, 5);
  const policy = new Policy(small, params);
  const active = [1, 4, 9];
  const x = Array.from({ length: 10 }, (_, i) => (active.includes(i) ? 1 : 0));

  it('computes the same logits as a dense reference over the 0/1 input', () => {
    for (const task of [0, 1]) {
      const got = Array.from(policy.forward(active, task).logits);
      const want = denseForward(params, small, x, task);
      expect(got).toHaveLength(want.length);
      got.forEach((g, i) => expect(g).toBeCloseTo(at(want, i), 12));
    }
    expect(() => policy.forward(active, 2)).toThrow(RangeError);
  });

  it('backpropagates the exact gradient (checked against central differences)', () => {
    // loss = Σ_a c_a · logit_a, so ∂loss/∂logits = c.
    const c = [0.7, -1.3, 0.4];
    const grads = policy.zeroGradients();
    policy.backward(policy.forward(active, 1), c, grads);
    const loss = (): number => denseForward(params, small, x, 1).reduce((s, l, a) => s + at(c, a) * l, 0);
    let checked = 0;
    for (const [name, data] of params) {
      for (let i = 0; i < data.length; i += 3) {
        const keep = atF32(data, i);
        const h = 1e-3;
        data[i] = keep + h;
        const up = loss();
        data[i] = keep - h;
        const down = loss();
        data[i] = keep;
        const numeric = (up - down) / (2 * h);
        expect(atF64(tensor(grads, name), i)).toBeCloseTo(numeric, 3);
        checked += 1;
      }
    }
    expect(checked).toBeGreaterThan(40);
    // Inputs that are 0 and the other task's embedding row get exactly no gradient.
    expect(grads.get('layers.0.weight')?.[0]).toBe(0);
    expect(
      tensor(grads, 'task_embed.weight')
        .subarray(0, 6)
        .every((g) => g === 0),
    ).toBe(true);
  });

  it('rejects parameters of the wrong shape', () => {
    const bad = new Map(params);
    bad.set('head.bias', new Float32Array(4));
    expect(() => new Policy(small, bad)).toThrow(/head.bias/);
    bad.delete('head.bias');
    expect(() => new Policy(small, bad)).toThrow(/missing/);
  });
});

describe('bf16 storage', () => {
  it('round-trips through BF16 bytes exactly, and an update below half a bf16 step vanishes', () => {
    const stored = roundParamsToBf16(initParams(small, 9));
    const back = loadDemoWeights(
      toBf16Tensors(small, stored).map((t) => ({
        name: t.name,
        dtype: t.dtype,
        shape: t.shape,
        bytes: t.data,
      })),
    );
    expect(back).toEqual(stored);

    const master = new Map([...stored].map(([n, v]) => [n, v.slice()]));
    const w = tensor(master, 'layers.0.weight');
    const w0 = atF32(w, 0);
    // bf16 keeps 8 significant bits: one step at |w0| is 2^(floor(log2|w0|) − 7).
    const ulp = 2 ** (Math.floor(Math.log2(Math.abs(w0))) - 7);
    // Moving away from zero keeps the step size the same on the way.
    w[0] = Math.fround(w0 + Math.sign(w0) * 0.4 * ulp);
    const w1 = atF32(w, 1);
    w[1] = Math.fround(w1 + 2 * 2 ** (Math.floor(Math.log2(Math.abs(w1))) - 7));
    expect(w[0]).not.toBe(w0);
    const rounded = tensor(roundParamsToBf16(master), 'layers.0.weight');
    expect(rounded[0]).toBe(w0);
    expect(rounded[1]).not.toBe(tensor(stored, 'layers.0.weight')[1]);
    expect(bf16ToF32(f32ToBf16(atF32(w, 0)))).toBe(w0);
  });
});

describe('config.json', () => {
  it('writes a Hugging Face style config that reads back to the same network', () => {
    const json = toConfigJson(
      small,
      { gridSize: 7, maxSteps: 24, observation: 'x', actions: ['u'] },
      {
        role: 'agent',
        task: 'a',
      },
    );
    expect(json).toMatchObject({
      model_type: 'merge-studio-gridworld-mlp',
      architectures: ['GridworldMlpPolicy'],
      torch_dtype: 'bfloat16',
      hidden_sizes: [6, 5],
      role: 'agent',
      task: 'a',
    });
    expect(policyConfigFromJson(JSON.parse(JSON.stringify(json)))).toEqual(small);
    expect(() => policyConfigFromJson({ ...json, model_type: 'llama' })).toThrow(/model_type/);
    expect(() => policyConfigFromJson({ ...json, hidden_sizes: [] })).toThrow(/hidden_sizes/);
    expect(() => policyConfigFromJson({ ...json, obs_size: 1.5 })).toThrow(/obs_size/);
  });
});

describe('softmax / argmax', () => {
  it('normalises stably and picks the first maximum', () => {
    const p = softmax([1000, 1000, 999]);
    expect(p[0]).toBeCloseTo(atF64(p, 1), 15);
    expect(p.reduce((a, b) => a + b, 0)).toBeCloseTo(1, 15);
    expect(argmax([0, 2, 2, -1])).toBe(1);
    expect(argmax([NaN, -5, -4])).toBe(2);
  });
});
