// An evaluation's progress in words and as a share of the work: models in turn, each scored layer by
// layer, then generating one token per pass through every layer.
import type { EvalJobProgress } from '../../worker/protocol.ts';

/** Of one model's work, the share scoring takes when it also generates (a guess: one pass of many). */
const SCORE_SHARE = 0.25;

/** The share of the pass done, 0 to 1. */
export function progressShare(p: EvalJobProgress): number {
  const layers = p.layers > 0 ? p.layer / p.layers : 0;
  let within: number;
  if (p.phase === 'score') within = p.steps > 0 ? SCORE_SHARE * layers : layers;
  else {
    const steps = Math.max(1, p.steps);
    within = SCORE_SHARE + (1 - SCORE_SHARE) * ((Math.max(0, p.step - 1) + layers) / steps);
  }
  return p.models > 0 ? Math.min(1, (p.model + within) / p.models) : 0;
}

/** e.g. "Scoring agent-0 (model 2 of 3): layer 3 of 4 (webgpu-f32)." */
export function progressText(p: EvalJobProgress): string {
  const who = `${p.label} (model ${p.model + 1} of ${p.models})`;
  const where =
    p.phase === 'score'
      ? `layer ${p.layer} of ${p.layers}`
      : `token ${p.step} of ${p.steps}, layer ${p.layer} of ${p.layers}, weights ${p.generation === 'held' ? 'held on the device' : 'read again per token'}`;
  const what =
    p.pass === 'references'
      ? 'Writing the reference completions of'
      : p.phase === 'score'
        ? 'Scoring'
        : 'Generating with';
  return `${what} ${who}: ${where} (${p.backend}).`;
}
