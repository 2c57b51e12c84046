import { describe, expect, it } from 'vitest';
import { shallow } from 'zustand/shallow';
import { createStudioStore } from '../../state/store.ts';
import type { Progress } from '../../driver/job.ts';
import type { StudioData } from '../../state/studio-slice.ts';
import { pickCompareData, pickRecipeData, sameBesidesProgress } from './picks.ts';

/** Sets studio fields the way the slice's patches do: a new studio object with the fields replaced. */
function patch(store: ReturnType<typeof createStudioStore>, changes: Partial<StudioData>): void {
  store.setState((s) => ({ studio: { ...s.studio, ...changes } }));
}

const progress = (bytesDone: number): Progress => ({
  stage: 'merge',
  bytesDone,
  bytesTotal: 100,
  tensorsDone: 1,
  tensorsTotal: 4,
  elapsedMs: bytesDone,
  bytesPerSecond: 1000,
});

describe.each([
  ['compare', pickCompareData],
  ['recipe', pickRecipeData],
])('the %s panel’s pick', (_, pick) => {
  it('stays shallow-equal while a merge reports progress', () => {
    const store = createStudioStore();
    patch(store, { merge: { status: 'running', progress: null, error: null, result: null } });
    const before = pick(store.getState());
    for (let done = 10; done <= 90; done += 40) {
      const merge = store.getState().studio.merge;
      patch(store, { merge: { ...merge, progress: progress(done) } });
      const after = pick(store.getState());
      expect(store.getState().studio.merge.progress).not.toBeNull();
      expect(shallow(before, after)).toBe(true);
    }
  });

  it('changes when what the panel shows changes', () => {
    const store = createStudioStore();
    const before = pick(store.getState());
    patch(store, { merges: [], models: [], library: { ...store.getState().studio.library } });
    expect(shallow(before, pick(store.getState()))).toBe(false);
  });
});

describe('sameBesidesProgress', () => {
  it('holds across progress reports of any task, and fails on anything else', () => {
    const store = createStudioStore();
    patch(store, { merge: { status: 'running', progress: null, error: null, result: null } });
    const before = store.getState().studio;
    patch(store, { merge: { ...before.merge, progress: progress(10) } });
    patch(store, { analysis: { ...before.analysis, progress: progress(20) } });
    patch(store, { comparison: { ...before.comparison, progress: progress(30) } });
    const reported = store.getState().studio;
    expect(reported).not.toBe(before);
    expect(sameBesidesProgress(before, reported)).toBe(true);
    // A task's status, a task's pair, a plain field: each is a change.
    patch(store, { merge: { ...reported.merge, status: 'done' } });
    expect(sameBesidesProgress(before, store.getState().studio)).toBe(false);
    patch(store, { merge: reported.merge, comparison: { ...reported.comparison, pair: ['a', 'b'] } });
    expect(sameBesidesProgress(before, store.getState().studio)).toBe(false);
    patch(store, { comparison: reported.comparison, outDtype: 'F32' });
    expect(sameBesidesProgress(before, store.getState().studio)).toBe(false);
    patch(store, { outDtype: before.outDtype });
    expect(sameBesidesProgress(before, store.getState().studio)).toBe(true);
  });
});
