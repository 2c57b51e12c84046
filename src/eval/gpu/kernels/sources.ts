// The shared WGSL the eval kernels are assembled from: the exact codecs of shaders/common/codec.wgsl
// (the merge kernels' own) and the stored-dtype weight access of shaders/eval/weight.wgsl.

import codec from '../../../../shaders/common/codec.wgsl?raw';
import weight from '../../../../shaders/eval/weight.wgsl?raw';

/** Codec and weight_at(e) over the kernel's `weight` binding (W_DTYPE override). */
export const WEIGHT_SOURCES: readonly string[] = [codec, weight];
