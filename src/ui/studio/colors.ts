// The studio's colours in one place: one colour per agent in load order (every chart and the arena
// use it), the sequential ramp of the heatmaps, and text colours chosen for contrast.

import { at } from '../../io/checked.ts';

/** Colour-blind-safe palette (Okabe–Ito), one per agent in load order. */
export const AGENT_COLORS = [
  '#0072b2',
  '#e69f00',
  '#009e73',
  '#cc79a7',
  '#56b4e9',
  '#d55e00',
  '#f0e442',
  '#000000',
];

export function agentColor(index: number): string {
  return AGENT_COLORS[index % AGENT_COLORS.length] ?? '#000000';
}

/** Base, merges and other non-agent series (arena). */
export const NEUTRAL_COLOR = '#5b6675';
export const MERGE_COLOR = '#7a1f5c';
/** Sign conflicts, and the ε marker. */
export const ALERT_COLOR = '#b3261e';
/** Cells outside a heatmap's scale (the overlap matrix's diagonal, empty ratios). */
export const OFF_SCALE_COLOR = '#d9dde3';

type Rgb = [number, number, number];

function rgb(hex: string): Rgb {
  const n = Number.parseInt(hex.slice(1), 16);
  return [(n >> 16) & 255, (n >> 8) & 255, n & 255];
}

function hex([r, g, b]: Rgb): string {
  return `#${[r, g, b].map((v) => Math.round(v).toString(16).padStart(2, '0')).join('')}`;
}

/** Viridis at nine stops: perceptually even, readable in grey and by the colour-blind. */
const RAMP = [
  '#440154',
  '#472d7b',
  '#3b528b',
  '#2c728e',
  '#21918c',
  '#28ae80',
  '#5ec962',
  '#addc30',
  '#fde725',
].map(rgb);

/** The ramp's colour at x in [0, 1] (clamped); low values are dark, high values light. */
export function rampColor(x: number): string {
  const t = Math.min(1, Math.max(0, Number.isFinite(x) ? x : 0)) * (RAMP.length - 1);
  const i = Math.min(RAMP.length - 2, Math.floor(t));
  const a = at(RAMP, i, 'colour ramp');
  const b = at(RAMP, i + 1, 'colour ramp');
  const f = t - i;
  return hex([a[0] + (b[0] - a[0]) * f, a[1] + (b[1] - a[1]) * f, a[2] + (b[2] - a[2]) * f]);
}

/** WCAG relative luminance of a #rrggbb colour. */
export function luminance(color: string): number {
  const [r, g, b] = rgb(color).map((v) => {
    const c = v / 255;
    return c <= 0.03928 ? c / 12.92 : ((c + 0.055) / 1.055) ** 2.4;
  }) as Rgb;
  return 0.2126 * r + 0.7152 * g + 0.0722 * b;
}

/** WCAG contrast ratio of two #rrggbb colours (1 to 21). */
export function contrast(a: string, b: string): number {
  const [hi, lo] = [luminance(a), luminance(b)].sort((x, y) => y - x) as [number, number];
  return (hi + 0.05) / (lo + 0.05);
}

/** Black or white, whichever reads better on `background`. */
export function textOn(background: string): string {
  return contrast(background, '#000000') >= contrast(background, '#ffffff') ? '#000000' : '#ffffff';
}
