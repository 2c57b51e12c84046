// A candidate's label is the CLI's `--candidate` line for the same merge: for every method and every
// parameter it reads, set away from its default, the CLI's parser gives back exactly the parameters.
import { describe, expect, it } from 'vitest';
import { parseCandidate } from '../../cli/eval.ts';
import { defaultParams, paramsRecord, validateParams } from '../../methods/defaults.ts';
import { specOf } from '../../methods/params.ts';
import { METHOD_LIST } from '../../methods/registry/index.ts';
import type { MethodName, MethodParams } from '../../methods/types.ts';
import { candidateLabel } from './candidates.ts';

const AGENTS = 2;

/** A value of the spec away from its default and inside its range (per agent: two different ones). */
function otherValue(key: string, current: unknown): unknown {
  const spec = specOf(key as never);
  if (spec.kind === 'boolean') return !current;
  if (spec.kind === 'enum') return (spec.values ?? []).find((v) => v !== current);
  if (spec.kind === 'integer') return 7;
  const lo = spec.range?.min ?? 0;
  const hi = spec.range?.max ?? lo + 2;
  const at = (share: number): number => Number((lo + (hi - lo) * share).toFixed(3));
  return spec.scope === 'agent' ? [at(0.37), at(0.61)] : at(0.37);
}

describe('candidateLabel', () => {
  it('names the defaults by the method alone, and equal per-agent values once', () => {
    expect(candidateLabel(defaultParams('ram', AGENTS), AGENTS)).toBe('ram');
    expect(candidateLabel({ ...defaultParams('ramplus', AGENTS), r: 0.3 }, AGENTS)).toBe('ramplus r=0.3');
    expect(candidateLabel({ ...defaultParams('ties', AGENTS), density: [0.7, 0.7] }, AGENTS)).toBe(
      'ties density=0.7',
    );
    expect(candidateLabel({ ...defaultParams('ties', AGENTS), density: [0.7, 0.3] }, AGENTS)).toBe(
      'ties density=0.7,0.3',
    );
  });

  for (const { name, parameters, plan } of METHOD_LIST)
    it(`is the CLI's --candidate for ${name}, each parameter set`, () => {
      // SLERP merges one agent into the base.
      const agents = plan.combine === 'slerp' ? 1 : AGENTS;
      let checked = 0;
      for (const key of parameters) {
        const params: MethodParams = defaultParams(name as MethodName, agents);
        const record = paramsRecord(params);
        // A per-agent parameter absent from the method's defaults has no list to set (nor a CLI flag).
        if (specOf(key).scope === 'agent' && record[key] === undefined) continue;
        record[key] = otherValue(key, record[key] ?? specOf(key).default) as never;
        if (validateParams(params, agents).length > 0) continue;
        const label = candidateLabel(params, agents);
        expect(label).toContain(`${specOf(key).flag}=`);
        expect(parseCandidate(label, agents)).toEqual({ label, params });
        checked++;
      }
      expect(checked).toBeGreaterThan(0);
    });
});
