// A PEFT LoRA adapter as an agent Model (SPEC.md "LoRA / PEFT adapters as agents"): the base's tensors
// by name and shape, each read as the agent's values θ₀ + τ. A tensor the adapter leaves alone reads
// the base's bytes; one it replaces (modules_to_save, trained biases, a stored base layer) reads the
// adapter's; one it adapts is F32 in a virtual file whose reads materialise the rows they touch
// (W + s·B·A, or DoRA's), the product on the engine's GPU kernel where there is one: never the whole
// model, nor a whole tensor beyond the rows a window needs. The driver then reads these F32 values
// at the read precision like any f32 agent (by default the base's dtype).

import { decodeFloats, isMergeableDtype, type FloatDtype } from '../format/dtype.ts';
import {
  AdapterError,
  baseModelNote,
  parseLoraConfig,
  planAdapter,
  type AdapterPlan,
  type LoraModule,
} from '../format/adapter.ts';
import { openModel, type Model, type ModelTensor } from '../format/model.ts';
import { ADAPTER_CONFIG } from '../format/peft.ts';
import { readTarget, type ByteSource, type ModelFile } from '../io/source.ts';
import { must } from '../io/checked.ts';
import { asRows, loraRows, type LowRankProduct } from '../methods/lora.ts';

/** The virtual file of the materialised tensors. */
const VIRTUAL = 'lora:materialised';
const BASE = 'base:';
const ADAPTER = 'adapter:';

export interface AdapterAgentOptions {
  /** The product for a read, asked at read time: the CLI makes its engine after opening the models. */
  product: () => LowRankProduct;
  /** Names the base is known by (its folder, config _name_or_path), for base_model_name_or_path. */
  baseNames?: string[];
}

/** What an adapter agent was opened from: its plan and its own weights, by the agent Model. */
export interface AdapterSource {
  plan: AdapterPlan;
  weights: Model;
  label: string;
}

const sources = new WeakMap<Model, AdapterSource>();

/** The adapter an agent Model was opened from (openAdapterAgent), or undefined for a stored model. */
export function adapterSource(model: Model): AdapterSource | undefined {
  return sources.get(model);
}

/** Whether an agent's tensor is one an adapter adapts (its values materialised from s·B·A). */
export function isMaterialised(tensor: ModelTensor | undefined): boolean {
  return tensor?.file === VIRTUAL;
}

/** Whether a model's files are a PEFT adapter folder (its adapter_config.json). */
export function isAdapterFolder(files: readonly ModelFile[]): boolean {
  return files.some((f) => f.name === ADAPTER_CONFIG);
}

interface Factors {
  /** [rows, r] and [cols, r] of the product (methods/lora.ts LowRankJob). */
  left: Float32Array;
  right: Float32Array;
  magnitude?: Float64Array;
}

/** Opens an adapter folder's files as an agent over `base` (its own base, for mergekit's BASE+ADAPTER). */
export async function openAdapterAgent(
  name: string,
  files: ModelFile[],
  base: Model,
  options: AdapterAgentOptions,
): Promise<Model> {
  const configFile = must(
    files.find((f) => f.name === ADAPTER_CONFIG),
    `${ADAPTER_CONFIG} of ${name}`,
  );
  const configLabel = `${name}/${ADAPTER_CONFIG}`;
  const settings = parseLoraConfig(
    new TextDecoder().decode(await configFile.source.read(0, configFile.source.size)),
    configLabel,
  );
  const adapter = await openModel(
    name,
    files.filter((f) => f.name !== ADAPTER_CONFIG),
  );
  const weightsFile = adapter.shards.map((s) => s.file).join(', ');
  const label = `${name}/${weightsFile}`;
  const plan = planAdapter(settings, [...adapter.tensors.values()], (n) => base.tensors.get(n)?.shape, label);
  const tensor = (n: string): ModelTensor => must(adapter.tensors.get(n), `adapter tensor ${n}`);

  const tensors: ModelTensor[] = [];
  let virtualBytes = 0;
  for (const t of base.tensors.values()) {
    if (plan.modules.has(t.name) || plan.biases.has(t.name)) {
      if (!isMergeableDtype(t.dtype))
        throw new AdapterError(label, `adapts ${t.name}, stored in ${t.dtype}: not a float tensor`);
      const bytes = t.shape.reduce((a, b) => a * b, 1) * 4;
      tensors.push({
        ...t,
        dtype: 'F32',
        file: VIRTUAL,
        begin: virtualBytes,
        end: virtualBytes + bytes,
        offset: virtualBytes,
      });
      virtualBytes += bytes;
      continue;
    }
    const stored = plan.replaced.get(t.name);
    if (stored !== undefined) {
      const own = tensor(stored);
      tensors.push({ ...own, name: t.name, file: ADAPTER + own.file });
    } else tensors.push({ ...t, file: BASE + t.file });
  }
  const byName = new Map(tensors.map((t) => [t.name, t]));
  const materialiser = new Materialiser(label, plan, base, adapter, byName, options.product);
  const virtual = materialiser.source(`${name} (materialised)`, virtualBytes);
  const note = baseModelNote(name, settings.baseModel, base.name, [
    base.name,
    ...(typeof base.config?._name_or_path === 'string' ? [base.config._name_or_path] : []),
    ...(options.baseNames ?? []),
  ]);
  const agent: Model = {
    name,
    files,
    shards: adapter.shards,
    // Sorted as the base's: the same names.
    tensors: byName,
    ...(base.config ? { config: base.config } : {}),
    sharded: false,
    warnings: [...adapter.warnings, ...(note ? [note] : [])],
    totalBytes: tensors.reduce((sum, t) => sum + t.end - t.begin, 0),
    source(file) {
      if (file === VIRTUAL) return virtual;
      if (file.startsWith(ADAPTER)) return adapter.source(file.slice(ADAPTER.length));
      if (file.startsWith(BASE)) return base.source(file.slice(BASE.length));
      throw new AdapterError(label, `has no file ${file}`);
    },
  };
  sources.set(agent, { plan, weights: adapter, label });
  return agent;
}

/** Rows [start, end) of one materialised tensor's values. */
interface Rows {
  tensor: string;
  start: number;
  end: number;
  values: Float32Array;
}

class Materialiser {
  private readonly factors = new Map<string, Promise<Factors>>();
  /** The last rows materialised: a window read by several passes, or by base and agent, once. */
  private readonly recent: Promise<Rows>[] = [];
  private readonly virtual: ModelTensor[];

  constructor(
    private readonly label: string,
    private readonly plan: AdapterPlan,
    private readonly base: Model,
    private readonly adapter: Model,
    private readonly tensors: Map<string, ModelTensor>,
    private readonly product: () => LowRankProduct,
  ) {
    this.virtual = [...tensors.values()].filter((t) => t.file === VIRTUAL).sort((a, b) => a.begin - b.begin);
  }

  source(name: string, size: number): ByteSource {
    return {
      name,
      size,
      read: async (offset, length, into) => {
        const target = readTarget(name, size, offset, length, into);
        let done = 0;
        while (done < length) {
          const at = offset + done;
          const t = this.tensorAt(at);
          const first = (at - t.begin) >> 2;
          const count = Math.min((length - done) >> 2, (t.end - at) >> 2);
          if ((at - t.begin) % 4 !== 0 || count <= 0)
            throw new AdapterError(
              this.label,
              `read of ${length} bytes at ${offset} is not whole f32 values`,
              t.name,
            );
          const values = await this.values(t, first, first + count);
          target.set(new Uint8Array(values.buffer, values.byteOffset, count * 4), done);
          done += count * 4;
        }
        return target;
      },
    };
  }

  private tensorAt(offset: number): ModelTensor {
    let low = 0;
    let high = this.virtual.length - 1;
    while (low <= high) {
      const middle = (low + high) >>> 1;
      const t = must(this.virtual[middle], 'materialised tensor');
      if (offset < t.begin) high = middle - 1;
      else if (offset >= t.end) low = middle + 1;
      else return t;
    }
    throw new AdapterError(this.label, `no materialised tensor at byte ${offset}`);
  }

  /** Elements [first, end) of tensor `t`'s agent values, from the rows that hold them. */
  private async values(t: ModelTensor, first: number, end: number): Promise<Float32Array> {
    const cols = t.shape.length === 2 ? (t.shape[1] ?? 1) : t.shape.reduce((a, b) => a * b, 1);
    const start = Math.floor(first / cols);
    const stop = Math.ceil(end / cols);
    for (const pending of this.recent) {
      const rows = await pending;
      if (rows.tensor === t.name && rows.start <= start && rows.end >= stop)
        return rows.values.subarray(first - rows.start * cols, end - rows.start * cols);
    }
    const made = this.rows(t, start, stop, cols).then((values) => ({
      tensor: t.name,
      start,
      end: stop,
      values,
    }));
    this.recent.unshift(made);
    this.recent.length = Math.min(this.recent.length, 2);
    try {
      const rows = await made;
      return rows.values.subarray(first - start * cols, end - start * cols);
    } catch (error) {
      this.recent.splice(this.recent.indexOf(made), 1);
      if (error instanceof AdapterError) throw error;
      throw new AdapterError(
        this.label,
        `materialising rows ${start}..${stop}: ${(error as Error).message}`,
        t.name,
      );
    }
  }

  private async rows(t: ModelTensor, start: number, stop: number, cols: number): Promise<Float32Array> {
    const weight = await this.startingValues(t.name, start * cols, stop * cols);
    const bias = this.plan.biases.get(t.name);
    if (bias) {
      const added = await this.adapterValues(bias.tensor, start * cols, stop * cols);
      const s = Math.fround(bias.scale);
      return Float32Array.from(weight, (w, i) => w + Math.fround((added[i] ?? 0) * s));
    }
    const module = must(this.plan.modules.get(t.name), `LoRA module of ${t.name}`);
    const { left, right, magnitude } = await this.factorsOf(module);
    const product = await this.product()({
      left: left.subarray(start * module.r, stop * module.r),
      right,
      rows: stop - start,
      cols,
      rank: module.r,
    });
    return loraRows(weight, product, module.scale, stop - start, cols, magnitude?.subarray(start, stop));
  }

  /** The values the agent starts from: the adapter's stored tensor where it replaces the base's, else the base's. */
  private startingValues(name: string, first: number, end: number): Promise<Float64Array> {
    const stored = this.plan.replaced.get(name);
    if (stored !== undefined) return this.adapterValues(stored, first, end);
    return decoded(
      this.base,
      must(this.base.tensors.get(name), `base tensor ${name}`),
      first,
      end,
      this.label,
    );
  }

  private adapterValues(name: string, first: number, end: number): Promise<Float64Array> {
    return decoded(
      this.adapter,
      must(this.adapter.tensors.get(name), `adapter tensor ${name}`),
      first,
      end,
      this.label,
    );
  }

  private factorsOf(module: LoraModule): Promise<Factors> {
    let found = this.factors.get(module.target);
    if (!found) {
      found = this.loadFactors(module);
      this.factors.set(module.target, found);
      // A few modules at a time: tensors stream in order, and a large adapter's factors stay on disk.
      for (const key of this.factors.keys())
        if (this.factors.size > 4 && key !== module.target) this.factors.delete(key);
      found.catch(() => this.factors.delete(module.target));
    }
    return found;
  }

  private async loadFactors(module: LoraModule): Promise<Factors> {
    const a = must(this.adapter.tensors.get(module.a), module.a);
    const b = must(this.adapter.tensors.get(module.b), module.b);
    const r = module.r;
    const aValues = Float32Array.from(await decoded(this.adapter, a, 0, r * (a.shape[1] ?? 0), this.label));
    const bValues = Float32Array.from(await decoded(this.adapter, b, 0, (b.shape[0] ?? 0) * r, this.label));
    const inDim = a.shape[1] ?? 0;
    // B·A: rows of B times columns of A; (B·A)ᵀ: rows of Aᵀ times columns of Bᵀ.
    const [left, right] = module.transposed
      ? [asRows(aValues, inDim, r, true), bValues]
      : [bValues, asRows(aValues, inDim, r, true)];
    const m =
      module.magnitude === undefined
        ? undefined
        : must(this.adapter.tensors.get(module.magnitude), module.magnitude);
    return {
      left,
      right,
      ...(m ? { magnitude: await decoded(this.adapter, m, 0, m.shape[0] ?? 0, this.label) } : {}),
    };
  }
}

/** Elements [first, end) of a model's float tensor, decoded exactly. */
async function decoded(
  model: Model,
  t: ModelTensor,
  first: number,
  end: number,
  label: string,
): Promise<Float64Array> {
  if (!isMergeableDtype(t.dtype))
    throw new AdapterError(
      label,
      `is stored in ${t.dtype}; LoRA factors and replaced tensors must be BF16, F16 or F32`,
      t.name,
    );
  const size = t.dtype === 'F32' ? 4 : 2;
  const bytes = await model.source(t.file).read(t.offset + first * size, (end - first) * size);
  return decodeFloats(t.dtype as FloatDtype, bytes, end - first);
}
