// merge_branches.json: what a merge writes is read back as it was, and a file of another shape (a
// folder from elsewhere, an older version) reads as "no branches" rather than as wrong numbers.
import { describe, expect, it } from 'vitest';
import { deriveTensorStats, emptyTensorStats, sumStats } from '../methods/stats.ts';
import { mergeBranches, parseBranches } from './merge-branches.ts';

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
      epsilon: 1e-5,
      agents: ['key', 'door'],
      numel: 6,
      counts: [2, 3, 1],
      unique: [2, 1],
      signConflicts: 1,
    });
    expect(parseBranches(JSON.stringify(branches))).toEqual(branches);
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
    ])
      expect(parseBranches(text), String(text)).toBeNull();
  });
});
