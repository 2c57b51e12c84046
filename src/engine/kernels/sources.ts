// The shared WGSL helpers every kernel is assembled from (concatenated before the kernel's own file).

import codec from '../../../shaders/common/codec.wgsl?raw';
import window from '../../../shaders/common/window.wgsl?raw';
import elementwise from '../../../shaders/common/elementwise.wgsl?raw';
import rng from '../../../shaders/common/rng.wgsl?raw';

/** Codec and window layout: what every kernel starts with. */
export const WINDOW_SOURCES: readonly string[] = [codec, window];
/** Plus the one-invocation-per-output-word entry point of the element-wise merges. */
export const ELEMENTWISE_SOURCES: readonly string[] = [codec, window, elementwise];
export const RNG_SOURCE: string = rng;
