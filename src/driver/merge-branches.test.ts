// merge_branches.json: what a merge writes is read back as it was, and a file of another shape (a
// folder from elsewhere) reads as "no branches" rather than as wrong numbers; a file of the last version
// (no source) reads as statistics.
import { describe, expect, it } from 'vitest';
import { deriveTensorStats, emptyTensorStats, sumStats } from '../methods/stats.ts';
import { keptBranches, mergeBranches, parseBranches } from './merge-branches.ts';

describe('merge branches', () => {
  // Six elements: two unchanged, key alone changed two, door alone one, both changed one (in conflict).
  const stats = emptyTensorStats('t', 'F32', 6, 2);
  stats.overlap = [
    [2, 1],
    [1, 1],
  ];
  stats.counts = [2, 3, 1];
  stats.signConflicts = 1;
  deriveTensorStats(stats);
  const branches = mergeBranches(1e-5, ['key', 'door'], sumStats([stats], 2));

  it('reads back what it wrote', () => {
    expect(branches).toEqual({
      source: 'statistics',
      epsilon: 1e-5,
      agents: ['key', 'door'],
      numel: 6,
      counts: [2, 3, 1],
      unique: [2, 1],
      signConflicts: 1,
    });
    expect(parseBranches(JSON.stringify(branches))).toEqual(branches);
  });

  it('reads a file of the last version (no source) as statistics', () => {
    const { source, ...older } = branches;
    expect(source).toBe('statistics');
    expect(parseBranches(JSON.stringify(older))).toEqual(branches);
  });

  it('keeps counts from a merge as such, numel their sum', () => {
    const kept = keptBranches(1e-5, ['key', 'door'], { counts: [3, 2, 1], unique: [0, 2], signConflicts: 1 });
    expect(kept).toEqual({
      source: 'merge',
      epsilon: 1e-5,
      agents: ['key', 'door'],
      numel: 6,
      counts: [3, 2, 1],
      unique: [0, 2],
      signConflicts: 1,
    });
    expect(parseBranches(JSON.stringify(kept))).toEqual(kept);
  });

  it('reads anything else as no branches', () => {
    for (const text of [
      null,
      '',
      'not json',
      'null',
      JSON.stringify({ ...branches, numel: -1 }),
      JSON.stringify({ ...branches, counts: [1.5] }),
      JSON.stringify({ ...branches, unique: [1] }),
      JSON.stringify({ ...branches, agents: [1, 2] }),
      JSON.stringify({ ...branches, epsilon: '1e-5' }),
      JSON.stringify({ ...branches, source: 'guess' }),
      JSON.stringify({ ...branches, source: null }),
    ])
      expect(parseBranches(text), String(text)).toBeNull();
  });
});
