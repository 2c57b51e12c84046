// Checked access for values the code holds to exist: where one is missing that is a bug, so these
// throw an error naming what was missing instead of letting `undefined` travel on (or hiding it
// behind a non-null assertion).

/** `value`, or an error naming `what` where it is undefined or null. */
export function must<T>(value: T, what: string): NonNullable<T> {
  if (value === undefined || value === null) throw new Error(`${what} is missing`);
  return value;
}

/**
 * `items[index]`, or a RangeError naming `what` where the index is outside the array. An element
 * that is itself undefined counts as missing: use it on arrays whose elements never are.
 */
export function at<T>(items: ArrayLike<T>, index: number, what = 'array'): T {
  const value = items[index];
  if (value === undefined)
    throw new RangeError(`${what}: index ${index} is out of range (length ${items.length})`);
  return value;
}

// Typed twins of `at` for numeric inner loops: each keeps its element loads monomorphic, where one
// generic `at` fed every array type made the demo's training about twice as slow.

/** `at` for a Float32Array. */
export function atF32(items: Float32Array, index: number, what = 'Float32Array'): number {
  const value = items[index];
  if (value === undefined)
    throw new RangeError(`${what}: index ${index} is out of range (length ${items.length})`);
  return value;
}

/** `at` for a Float64Array. */
export function atF64(items: Float64Array, index: number, what = 'Float64Array'): number {
  const value = items[index];
  if (value === undefined)
    throw new RangeError(`${what}: index ${index} is out of range (length ${items.length})`);
  return value;
}
