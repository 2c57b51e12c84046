// The quota messages: the platform's QuotaExceededError (wrapped or not) becomes "quota full" with
// the estimate's numbers and the bytes the merge needed.
import { describe, expect, it } from 'vitest';
import { isQuotaError, quotaFull } from './storage.ts';

const GiB = 1024 ** 3;

describe('quota full', () => {
  it('finds the quota refusal in the error or the errors it wraps', () => {
    const platform = new DOMException(
      'The operation failed because it would cause the quota to be exceeded.',
      'QuotaExceededError',
    );
    expect(isQuotaError(platform)).toBe(true);
    expect(isQuotaError(new Error('write failed', { cause: new Error('shard', { cause: platform }) }))).toBe(
      true,
    );
    expect(isQuotaError(new Error('other'))).toBe(false);
    expect(isQuotaError('QuotaExceededError')).toBe(false);
  });

  it('says quota full with used, quota, free and needed bytes instead of the platform text', () => {
    const platform = new DOMException(
      'The operation failed because it would cause the quota to be exceeded.',
      'QuotaExceededError',
    );
    const error = quotaFull({ usage: 9.5 * GiB, quota: 10 * GiB }, 3 * GiB, platform);
    expect(error.name).toBe('QuotaFull');
    expect(error.message).toMatch(
      /^Browser storage quota full: the merge needs about 3(\.0+)? GiB \(9\.5\d* GiB of 10(\.0+)? GiB used, 512(\.0+)? MiB free\)/,
    );
    expect(error.message).not.toContain('operation failed');
    expect(error.message).toContain('Merge into a folder…');
    expect(error.cause).toBe(platform);
    expect(quotaFull(undefined, GiB).message).toContain('the browser gives no estimate of its use');
  });
});
