// Display formatting of sizes, counts and durations in the GPU panel.
import { describe, expect, it } from 'vitest';
import { formatBytes, formatCompact, formatCount, formatDuration, formatLimit } from './format.ts';

describe('formatBytes', () => {
  it('uses binary units and drops trailing zeros', () => {
    expect(formatBytes(0)).toBe('0 bytes');
    expect(formatBytes(1023)).toBe('1023 bytes');
    expect(formatBytes(16384)).toBe('16 KiB');
    expect(formatBytes(128 * 2 ** 20)).toBe('128 MiB');
    expect(formatBytes(2 ** 30)).toBe('1 GiB');
    expect(formatBytes(1.5 * 2 ** 30)).toBe('1.5 GiB');
    expect(formatBytes(2 ** 32 - 4)).toBe('4 GiB');
  });

  it('shows a rate below 1 KiB/s in whole bytes (issue 38: "137.81223083548667 B/s")', () => {
    expect(formatBytes(137.81223083548667)).toBe('138 bytes');
    expect(formatBytes(0.4)).toBe('0 bytes');
  });
});

describe('formatCount', () => {
  it('groups thousands', () => {
    expect(formatCount(65535)).toBe('65,535');
    expect(formatCount(256)).toBe('256');
  });
});

describe('formatDuration', () => {
  it('keeps about three significant digits', () => {
    expect(formatDuration(0.4234)).toBe('0.42 ms');
    expect(formatDuration(12.345)).toBe('12.3 ms');
    expect(formatDuration(1250)).toBe('1.25 s');
  });
});

describe('formatLimit', () => {
  it('formats byte limits as sizes and the others as counts', () => {
    expect(formatLimit('maxBufferSize', 2 ** 28)).toBe('256 MiB');
    expect(formatLimit('maxComputeWorkgroupsPerDimension', 65535)).toBe('65,535');
  });
});

describe('formatCompact', () => {
  it.each([
    [0, '0'],
    [950, '950'],
    [7_500_000, '7.5M'],
    [136_134_656, '136.1M'],
    [3_400_000_000, '3.4B'],
    [12_000, '12K'],
  ])('%d → %s', (value, text) => expect(formatCompact(value)).toBe(text));
});
