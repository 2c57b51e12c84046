// What a merge kept of each agent's skill: a probe set named after an agent is that agent's, and
// every other model is measured against the agent on it (top-1 rate as a share of the agent's, and
// the mean NLL per token above the agent's).
import type { EvalResult } from '../../worker/protocol.ts';

export interface Retention {
  /** top-1 rate of the model ÷ the agent's; null where the agent's is 0. */
  retention: number | null;
  /** Mean NLL per token of the model − the agent's (nats; > 0: worse than the agent). */
  dNll: number;
}

export interface SetRetention {
  /** The model (result column) whose label the set is named after, when it is an agent. */
  agent: number | null;
  /** Per model: its retention against that agent; null for the agent itself and without one. */
  cells: (Retention | null)[];
}

/** The retention of every model on every set that is an agent's own. */
export function retentionOf(result: EvalResult, agents: readonly boolean[]): SetRetention[] {
  return result.sets.map((set) => {
    const found = result.models.findIndex((m, i) => agents[i] === true && m.label === set.set);
    const agent = found < 0 ? null : found;
    const cells = result.models.map((_, m): Retention | null => {
      if (agent === null || m === agent) return null;
      const ownTop1 = set.top1Rate[agent] ?? 0;
      return {
        retention: ownTop1 > 0 ? (set.top1Rate[m] ?? 0) / ownTop1 : null,
        dNll: (set.meanNll[m] ?? 0) - (set.meanNll[agent] ?? 0),
      };
    });
    return { agent, cells };
  });
}

/** Bands of retention the table colours: most of the agent's top-1 kept, some, or little. */
export const KEPT_AT = 0.95;
export const PARTIAL_AT = 0.8;

export function retentionLevel(retention: number | null): 'kept' | 'partial' | 'lost' | 'none' {
  if (retention === null) return 'none';
  if (retention >= KEPT_AT) return 'kept';
  return retention >= PARTIAL_AT ? 'partial' : 'lost';
}
