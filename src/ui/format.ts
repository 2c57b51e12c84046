// Display formatting for the GPU panel: byte sizes, counts, durations and limit labels.
import type { GpuKeyLimits } from '../worker/probe.ts';

const BYTE_UNITS = ['bytes', 'KiB', 'MiB', 'GiB', 'TiB'] as const;

/** Binary units, at most two decimals, trailing zeros dropped: 1073741824 → "1 GiB". */
export function formatBytes(bytes: number): string {
  let value = bytes;
  let unit = 0;
  while (value >= 1024 && unit < BYTE_UNITS.length - 1) {
    value /= 1024;
    unit++;
  }
  // A rate below 1 KiB/s is a fraction of bytes: whole bytes are what a person reads.
  const shown = unit === 0 ? String(Math.round(value)) : String(Number(value.toFixed(2)));
  return `${shown} ${BYTE_UNITS[unit]}`;
}

const integers = new Intl.NumberFormat('en-US', { maximumFractionDigits: 0 });

export function formatCount(value: number): string {
  return integers.format(value);
}

const compact = new Intl.NumberFormat('en-US', { notation: 'compact', maximumFractionDigits: 1 });

/** Chart axes: 7,500,000 → "7.5M", 3,400,000,000 → "3.4B", keeping every leading digit. */
export function formatCompact(value: number): string {
  return compact.format(value);
}

/** Milliseconds with precision that suits the size: "0.42 ms", "12.3 ms", "1.25 s". */
export function formatDuration(ms: number): string {
  if (ms >= 1000) return `${Number((ms / 1000).toFixed(2))} s`;
  if (ms >= 10) return `${Number(ms.toFixed(1))} ms`;
  return `${Number(ms.toFixed(2))} ms`;
}

export interface LimitDisplay {
  label: string;
  kind: 'bytes' | 'count';
}

export const LIMIT_DISPLAY: Record<keyof GpuKeyLimits, LimitDisplay> = {
  maxStorageBufferBindingSize: { label: 'Storage buffer binding', kind: 'bytes' },
  maxBufferSize: { label: 'Buffer size', kind: 'bytes' },
  maxComputeWorkgroupsPerDimension: { label: 'Workgroups per dimension', kind: 'count' },
  maxComputeInvocationsPerWorkgroup: { label: 'Invocations per workgroup', kind: 'count' },
  maxComputeWorkgroupStorageSize: { label: 'Workgroup storage', kind: 'bytes' },
  maxStorageBuffersPerShaderStage: { label: 'Storage buffers per stage', kind: 'count' },
};

export function formatLimit(name: keyof GpuKeyLimits, value: number): string {
  return LIMIT_DISPLAY[name].kind === 'bytes' ? formatBytes(value) : formatCount(value);
}
