// The one list of merge methods. Adding a method: one descriptor file beside this one, and one line
// here. Everything else (CLI flags and help, the YAML reader and writer, the engines, the model card,
// the studio's merge panel) reads from this list.
import type { MethodDescriptor } from './descriptor.ts';
import { breadcrumbs } from './breadcrumbs.ts';
import { breadcrumbsTies } from './breadcrumbs_ties.ts';
import { dareLinear } from './dare_linear.ts';
import { dareTies } from './dare_ties.ts';
import { della } from './della.ts';
import { dellaLinear } from './della_linear.ts';
import { linear } from './linear.ts';
import { ram } from './ram.ts';
import { ramplus } from './ramplus.ts';
import { ramplusSoft } from './ramplus_soft.ts';
import { ramplusTl } from './ramplus_tl.ts';
import { slerp } from './slerp.ts';
import { taskArithmetic } from './task_arithmetic.ts';
import { ties } from './ties.ts';

export const METHOD_LIST = [
  ram,
  ramplus,
  ramplusSoft,
  ramplusTl,
  linear,
  taskArithmetic,
  ties,
  dareLinear,
  dareTies,
  della,
  dellaLinear,
  breadcrumbs,
  breadcrumbsTies,
  slerp,
] as const;

const BY_NAME: ReadonlyMap<string, MethodDescriptor> = new Map(METHOD_LIST.map((d) => [d.name, d]));

/** The descriptor of a method name (a MethodName, so it exists). */
export function methodOf(name: string): MethodDescriptor {
  const descriptor = BY_NAME.get(name);
  if (!descriptor) throw new RangeError(`unknown merge method ${JSON.stringify(name)}`);
  return descriptor;
}

export type { MethodDescriptor, MethodPlan, ParameterKey, Sparsify } from './descriptor.ts';
