import { describe, expect, it } from 'vitest';
import type { EvalJobProgress } from '../../worker/protocol.ts';
import { progressShare, progressText } from './progress.ts';

const at = (changes: Partial<EvalJobProgress>): EvalJobProgress => ({
  phase: 'score',
  model: 0,
  models: 2,
  layer: 0,
  layers: 4,
  step: 0,
  steps: 0,
  rows: 0,
  generation: 'streamed',
  pass: 'score',
  label: 'agent-0',
  backend: 'cpu',
  ...changes,
});

describe('progressShare', () => {
  it('counts models in turn, layers within one', () => {
    expect(progressShare(at({ layer: 2 }))).toBe(0.25);
    expect(progressShare(at({ model: 1, layer: 4 }))).toBe(1);
  });

  it('gives scoring a quarter of a model that also generates, and each token the same share of the rest', () => {
    expect(progressShare(at({ models: 1, layer: 4, steps: 3 }))).toBe(0.25);
    expect(progressShare(at({ models: 1, phase: 'generate', step: 1, steps: 3, layer: 4 }))).toBe(0.5);
    expect(progressShare(at({ models: 1, phase: 'generate', step: 3, steps: 3, layer: 4 }))).toBe(1);
  });
});

describe('progressText', () => {
  it('names the pass, the model and where it is', () => {
    expect(progressText(at({ layer: 3 }))).toBe('Scoring agent-0 (model 1 of 2): layer 3 of 4 (cpu).');
    expect(
      progressText(
        at({ pass: 'references', phase: 'generate', step: 2, steps: 8, layer: 1, generation: 'held' }),
      ),
    ).toBe(
      'Writing the reference completions of agent-0 (model 1 of 2): token 2 of 8, layer 1 of 4, weights held on the device (cpu).',
    );
  });
});
