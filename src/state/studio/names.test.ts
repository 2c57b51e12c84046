// Merge names: the default, the cleaning of a typed name, and the folder name made from it.
import { describe, expect, it } from 'vitest';
import { cleanName, defaultMergeName, folderPart, MAX_NAME } from './names.ts';

describe('merge names', () => {
  it('defaults to method, agent count and date', () => {
    expect(defaultMergeName('ram', 3, new Date(2026, 11, 7, 23, 59))).toBe('ram-3-agents-2026-12-07');
    expect(defaultMergeName('ties', 1, new Date(2026, 0, 2))).toBe('ties-1-agent-2026-01-02');
  });

  it('keeps a typed name on one line and at most MAX_NAME characters', () => {
    expect(cleanName('  my\nmerge\t ')).toBe('my merge');
    expect(cleanName('x'.repeat(500))).toHaveLength(MAX_NAME);
    expect(cleanName('   ')).toBe('');
  });

  it('makes a folder name any file system takes', () => {
    expect(folderPart('ram-3-agents-2026-12-07')).toBe('ram-3-agents-2026-12-07');
    expect(folderPart('Café merge: v2/final?')).toBe('Cafe-merge-v2-final');
    expect(folderPart('../../etc/passwd')).toBe('etc-passwd');
    expect(folderPart('.hidden')).toBe('hidden');
    expect(folderPart('<>|*')).toBe('merge');
    expect(folderPart('模型')).toBe('merge');
    const long = folderPart('a'.repeat(63) + ' tail');
    expect(long.length).toBeLessThanOrEqual(64);
    expect(long).toMatch(/^[A-Za-z0-9][A-Za-z0-9._-]*[A-Za-z0-9_]$/);
  });
});
