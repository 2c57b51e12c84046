// How the agents' task vectors τ = agent − base are spread over the weights: the share of elements
// each agent changed (|τ| > ε) and how many of those no other agent changed (SPEC.md's N_unique).

import { at, atF32 } from '../io/checked.ts';

export interface AgentChanges {
  name: string;
  numel: number;
  changed: number;
  /** Changed by this agent and by no other. */
  unique: number;
  /** changed / numel. */
  changedShare: number;
  /** unique / changed (0 when nothing changed). */
  uniqueShare: number;
  /** Per tensor: [name, changed, unique, numel]; integer counts that sum to the totals above. */
  perTensor: [string, number, number, number][];
}

/** Counts per agent over every tensor of the base, with τ computed in f64 from the stored values. */
export function changeStats(
  base: ReadonlyMap<string, Float32Array>,
  agents: readonly { name: string; params: ReadonlyMap<string, Float32Array> }[],
  epsilon = 1e-5,
): AgentChanges[] {
  const results: AgentChanges[] = agents.map((a) => ({
    name: a.name,
    numel: 0,
    changed: 0,
    unique: 0,
    changedShare: 0,
    uniqueShare: 0,
    perTensor: [],
  }));
  for (const [name, b] of base) {
    const values = agents.map((a) => {
      const v = a.params.get(name);
      if (!v || v.length !== b.length)
        throw new Error(`changeStats: agent ${a.name} lacks ${name} of ${b.length}`);
      return v;
    });
    const changed = new Array<number>(agents.length).fill(0);
    const unique = new Array<number>(agents.length).fill(0);
    for (const [i, baseValue] of b.entries()) {
      let count = 0;
      let last = -1;
      values.forEach((v, t) => {
        if (Math.abs(atF32(v, i, name) - baseValue) > epsilon) {
          changed[t] = at(changed, t, 'changed counts') + 1;
          count += 1;
          last = t;
        }
      });
      if (count === 1) unique[last] = at(unique, last, 'unique counts') + 1;
    }
    results.forEach((r, t) => {
      const changedHere = at(changed, t, 'changed counts');
      const uniqueHere = at(unique, t, 'unique counts');
      r.perTensor.push([name, changedHere, uniqueHere, b.length]);
      r.numel += b.length;
      r.changed += changedHere;
      r.unique += uniqueHere;
    });
  }
  for (const r of results) {
    r.changedShare = r.numel === 0 ? 0 : r.changed / r.numel;
    r.uniqueShare = r.changed === 0 ? 0 : r.unique / r.changed;
  }
  return results;
}
