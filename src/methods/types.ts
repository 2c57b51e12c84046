// The merge recipe as plain data: which method, its parameters, and per-agent weights.

import { METHOD_LIST } from './registry/index.ts';
import type { ParamValues } from './params.ts';

/** Every method's name, in the registry's order (src/methods/registry/index.ts). */
export type MethodName = (typeof METHOD_LIST)[number]['name'];
export const METHODS: readonly MethodName[] = METHOD_LIST.map((d) => d.name);

export interface MethodParams extends ParamValues {
  method: MethodName;
}
