// The virtual table's window: which rows a scroll position renders.
import { describe, expect, it } from 'vitest';
import { visibleRange } from './VirtualTable.tsx';

describe('visibleRange', () => {
  it('renders the rows in view and eight more on each side, clamped to the list', () => {
    expect(visibleRange(300_000, 0, 300, 30)).toEqual({ first: 0, last: 18 });
    expect(visibleRange(300_000, 30 * 1000, 300, 30)).toEqual({ first: 992, last: 1018 });
    expect(visibleRange(300_000, 30 * 300_000, 300, 30)).toEqual({ first: 299_992, last: 300_000 });
  });

  it('renders every row of a short list and nothing of an empty one', () => {
    expect(visibleRange(5, 0, 300, 30)).toEqual({ first: 0, last: 5 });
    expect(visibleRange(0, 0, 300, 30)).toEqual({ first: 0, last: 0 });
  });
});
