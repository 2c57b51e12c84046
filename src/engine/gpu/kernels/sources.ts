// The shared WGSL helpers every kernel is assembled from (concatenated before the kernel's own file).

import codec from '../../../../shaders/common/codec.wgsl?raw';
import quotient from '../../../../shaders/common/quotient.wgsl?raw';
import window from '../../../../shaders/common/window.wgsl?raw';
import inputs from '../../../../shaders/common/inputs.wgsl?raw';
import elementwise from '../../../../shaders/common/elementwise.wgsl?raw';
import rng from '../../../../shaders/common/rng.wgsl?raw';
import finite from '../../../../shaders/common/finite.wgsl?raw';

/** Codec, window layout and word-wise element access: what every kernel starts with. */
export const WINDOW_SOURCES: readonly string[] = [codec, window, inputs];
/** Codec and window layout, for a kernel that declares the inputs binding itself. */
export const LAYOUT_SOURCES: readonly string[] = [codec, window];
/** Plus the one-invocation-per-output-word entry point (the convert kernel brings its own finish_pair). */
export const ELEMENTWISE_SOURCES: readonly string[] = [codec, window, inputs, elementwise];
/** The non-finite checks every merge kernel ends with (binding 5, `flags`). */
export const FINITE_SOURCE: string = finite;
/** The element-wise merges: the entry point with the non-finite checks, and exact division. */
export const MERGE_SOURCES: readonly string[] = [codec, quotient, window, inputs, finite, elementwise];
export const RNG_SOURCE: string = rng;
/** Correctly rounded f32 division (shaders/common/quotient.wgsl), for the kernels that divide. */
export const QUOTIENT_SOURCE: string = quotient;
