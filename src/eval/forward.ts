// The decoder-only forward pass (LlamaForCausalLM and the families that share its layer: Mistral,
// Qwen2, Qwen3), as transformers' forward defines it, sequenced over an EvalBackend. It is streamed by
// layer: every row of the batch passes through layer i before layer i + 1's tensors are read, so a model
// is run holding one layer's weights and the activations, never the whole model.

import { throwIfAborted } from '../io/abort.ts';
import type { Act, EvalBackend, RowScore, Weight } from './backend.ts';
import { type ForwardSpec, inverseFrequencies, ropeTables } from './config.ts';
import { EMBED, FINAL_NORM, layerShapes, layerTensor, LM_HEAD, type WeightSource } from './weights.ts';

/** Several token sequences laid end to end: one activation row per token. */
export interface ForwardBatch {
  ids: Int32Array;
  /** Per row: its position in its sequence (0 for the first token). */
  positions: Int32Array;
  /** Per row: the row of its sequence's first token. */
  seqStart: Int32Array;
  /** Per sequence: its first row. */
  starts: number[];
}

export function batchOf(sequences: readonly (readonly number[])[]): ForwardBatch {
  const total = sequences.reduce((n, s) => n + s.length, 0);
  const ids = new Int32Array(total);
  const positions = new Int32Array(total);
  const seqStart = new Int32Array(total);
  const starts: number[] = [];
  let row = 0;
  for (const sequence of sequences) {
    starts.push(row);
    for (let p = 0; p < sequence.length; p++) {
      ids[row + p] = sequence[p]!;
      positions[row + p] = p;
      seqStart[row + p] = row;
    }
    row += sequence.length;
  }
  return { ids, positions, seqStart, starts };
}

/** f32 bytes of activations per batch row while a layer runs (the MLP's three widest at once). */
export function activationBytesPerRow(spec: ForwardSpec): number {
  const q = spec.heads * spec.headDim;
  const kv = spec.kvHeads * spec.headDim;
  return 4 * (3 * spec.hidden + 2 * q + 2 * kv + 3 * spec.intermediate);
}

type LayerWeights = Record<string, Weight | undefined>;

/**
 * One model's pass over one batch. `hold`: keep each layer's uploaded weights after use (greedy
 * generation runs the model again for every new token; held weights are read from disk once).
 */
export class ForwardRun {
  private hidden: Act | undefined;
  private readonly held = new Map<string, Weight>();
  private readonly shapes: Record<string, readonly number[]>;

  constructor(
    private readonly backend: EvalBackend,
    readonly spec: ForwardSpec,
    private readonly weights: WeightSource,
    private readonly hold = false,
  ) {
    this.shapes = layerShapes(spec);
  }

  private async weight(name: string, shape: readonly number[]): Promise<Weight> {
    const kept = this.held.get(name);
    if (kept) return kept;
    const w = await this.backend.weight(await this.weights.tensor(name, shape));
    if (this.hold) this.held.set(name, w);
    return w;
  }

  private async layerWeights(layer: number): Promise<LayerWeights> {
    const out: LayerWeights = {};
    for (const [suffix, shape] of Object.entries(this.shapes)) {
      const name = layerTensor(layer, suffix);
      if (this.weights.has(name)) out[suffix] = await this.weight(name, shape);
    }
    const required = [
      'input_layernorm.weight',
      'self_attn.q_proj.weight',
      'self_attn.k_proj.weight',
      'self_attn.v_proj.weight',
      'self_attn.o_proj.weight',
      'post_attention_layernorm.weight',
      'mlp.gate_proj.weight',
      'mlp.up_proj.weight',
      'mlp.down_proj.weight',
      ...(this.spec.qkNorm ? ['self_attn.q_norm.weight', 'self_attn.k_norm.weight'] : []),
    ];
    // A missing tensor is reported by the source with the model's name (tensor() checks it).
    for (const suffix of required)
      if (!out[suffix]) out[suffix] = await this.weight(layerTensor(layer, suffix), this.shapes[suffix]!);
    return out;
  }

  private releaseLayer(ws: LayerWeights): void {
    if (this.hold) return;
    for (const w of Object.values(ws)) if (w) this.backend.release(w);
  }

  /** Replaces the hidden state, releasing the old one. */
  private set(next: Act): void {
    if (this.hidden && this.hidden !== next) this.backend.release(this.hidden);
    this.hidden = next;
  }

  async embed(batch: ForwardBatch): Promise<void> {
    const { vocab, hidden } = this.spec;
    const rows = await this.weights.gather(EMBED, [vocab, hidden], batch.ids);
    this.set(this.backend.upload(rows, batch.ids.length, hidden));
  }

  async layer(layer: number, batch: ForwardBatch): Promise<void> {
    const b = this.backend;
    const { spec } = this;
    const h = this.hidden;
    if (!h) throw new Error('ForwardRun.layer before embed');
    const w = await this.layerWeights(layer);
    const need = (suffix: string): Weight => w[suffix]!;
    const eps = spec.rmsNormEps;
    const x = b.rmsNorm(h, need('input_layernorm.weight'), eps);
    let q = b.linear(x, need('self_attn.q_proj.weight'), w['self_attn.q_proj.bias']);
    let k = b.linear(x, need('self_attn.k_proj.weight'), w['self_attn.k_proj.bias']);
    const v = b.linear(x, need('self_attn.v_proj.weight'), w['self_attn.v_proj.bias']);
    b.release(x);
    if (spec.qkNorm) {
      const qn = b.groupRmsNorm(q, need('self_attn.q_norm.weight'), spec.headDim, eps);
      const kn = b.groupRmsNorm(k, need('self_attn.k_norm.weight'), spec.headDim, eps);
      b.release(q);
      b.release(k);
      q = qn;
      k = kn;
    }
    const { cos, sin } = this.tables(batch);
    const qr = b.rope(q, cos, sin, spec.headDim);
    const kr = b.rope(k, cos, sin, spec.headDim);
    b.release(q);
    b.release(k);
    const a = b.attention(qr, kr, v, batch, {
      heads: spec.heads,
      kvHeads: spec.kvHeads,
      headDim: spec.headDim,
      scale: 1 / Math.sqrt(spec.headDim),
      window: spec.window,
    });
    b.release(qr);
    b.release(kr);
    b.release(v);
    const o = b.linear(a, need('self_attn.o_proj.weight'), w['self_attn.o_proj.bias']);
    b.release(a);
    const h2 = b.add(h, o);
    b.release(o);
    this.set(h2);
    const x2 = b.rmsNorm(h2, need('post_attention_layernorm.weight'), eps);
    const gate = b.linear(x2, need('mlp.gate_proj.weight'), w['mlp.gate_proj.bias']);
    const up = b.linear(x2, need('mlp.up_proj.weight'), w['mlp.up_proj.bias']);
    b.release(x2);
    const m = b.siluMul(gate, up);
    b.release(gate);
    b.release(up);
    const down = b.linear(m, need('mlp.down_proj.weight'), w['mlp.down_proj.bias']);
    b.release(m);
    this.set(b.add(h2, down));
    b.release(down);
    // The layer's weights may go only once the work reading them has run.
    await b.flush();
    this.releaseLayer(w);
  }

  private inv: Float32Array | undefined;
  private rope: { batch: ForwardBatch; cos: Float32Array; sin: Float32Array } | undefined;
  /** The batch's rotary tables, made once for all its layers. */
  private tables(batch: ForwardBatch): { cos: Float32Array; sin: Float32Array } {
    if (this.rope?.batch !== batch) {
      this.inv ??= inverseFrequencies(this.spec);
      this.rope = { batch, ...ropeTables(this.inv, batch.positions) };
    }
    return this.rope;
  }

  /**
   * Scores rows of the final hidden state against the whole vocabulary (the output head read in
   * blocks of at most `chunkBytes`): per row, log p(target), the argmax and its margin.
   */
  async score(
    rows: Int32Array,
    targets: Int32Array,
    chunkBytes: number,
    signal?: AbortSignal,
  ): Promise<RowScore> {
    const b = this.backend;
    const { spec } = this;
    if (!this.hidden) throw new Error('ForwardRun.score before embed');
    const normWeight = await this.weight(FINAL_NORM, [spec.hidden]);
    const picked = b.gather(this.hidden, rows);
    const x = b.rmsNorm(picked, normWeight, spec.rmsNormEps);
    b.release(picked);
    // An untied model without lm_head.weight is refused by the read below, never scored with the embedding.
    const head = spec.tieEmbeddings ? EMBED : LM_HEAD;
    const state = b.scoreStart(targets);
    const rowBytes = spec.hidden * 4;
    const block = Math.max(1, Math.min(spec.vocab, Math.floor(chunkBytes / rowBytes)));
    await this.weights.blocks(head, [spec.vocab, spec.hidden], block, async (start, stored) => {
      throwIfAborted(signal, 'The evaluation was cancelled.');
      const chunk = await b.weight(stored);
      b.scoreChunk(state, x, chunk, start);
      await b.flush();
      b.release(chunk);
    });
    b.release(x);
    if (!this.hold) b.release(normWeight);
    const result = await b.scoreRead(state);
    b.release(state);
    return result;
  }

  /** Lets go of the activations (and, when held, the weights). */
  release(): void {
    if (this.hidden) this.backend.release(this.hidden);
    this.hidden = undefined;
    for (const w of this.held.values()) this.backend.release(w);
    this.held.clear();
  }
}
