import { describe, expect, it } from 'vitest';
import { shallow } from 'zustand/shallow';
import { createStudioStore } from '../../state/store.ts';
import type { Progress } from '../../engine/driver.ts';
import type { StudioData } from '../../state/studio-slice.ts';
import { pickCompareData, pickRecipeData } from './picks.ts';

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
