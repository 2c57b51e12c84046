// The forward pass's x · Wᵀ (+ bias), W in its stored dtype: the engine's one matmul pipeline
// (src/engine/gpu/kernels/low_rank.ts, shaders/eval/linear.wgsl), which the LoRA product shares.

export {
  LOW_RANK_TILE_COLS as LINEAR_TILE_OUTS,
  LOW_RANK_TILE_ROWS as LINEAR_TILE_ROWS,
  matmulRequest as evalLinearRequest,
} from '../../../engine/gpu/kernels/low_rank.ts';
