// Candidate merges of the Evaluate step, named as the CLI's `--candidate` names them: the method, then
// each parameter it reads whose value is not the method's default, by flag ("ramplus r=0.3",
// "ties density=0.7,0.3"). The same line given to `merge-studio eval --candidate` is the same merge,
// and equal parameters are one name, so a candidate is added once.
import { defaultParams, paramsRecord } from '../../methods/defaults.ts';
import { specOf, type ParamScalar } from '../../methods/params.ts';
import { methodOf } from '../../methods/registry/index.ts';
import type { MethodParams } from '../../methods/types.ts';

type Value = ParamScalar | number[] | undefined;

const same = (a: Value, b: Value): boolean =>
  Array.isArray(a) && Array.isArray(b)
    ? a.length === b.length && a.every((v, i) => Object.is(v, b[i]))
    : Object.is(a, b);

/** A value as a `--candidate` pair writes it: a per-agent list comma-separated, one value where all agree. */
function valueText(value: Exclude<Value, undefined>): string {
  if (!Array.isArray(value)) return String(value);
  return value.every((v) => Object.is(v, value[0])) ? String(value[0]) : value.join(',');
}

/** The candidate's name: its method and, by flag, each parameter it reads that is not the default. */
export function candidateLabel(params: MethodParams, agents: number): string {
  const defaults = paramsRecord(defaultParams(params.method, agents));
  const record = paramsRecord(params);
  const pairs = methodOf(params.method).parameters.flatMap((key) => {
    const flag = specOf(key).flag;
    const value = record[key];
    if (!flag || value === undefined || same(value, defaults[key])) return [];
    return [`${flag}=${valueText(value)}`];
  });
  return [params.method, ...pairs].join(' ');
}
