// The heatmaps' colour legend: the ramp from 0 to the largest value shown with its ticks (linear or
// square root), and the swatch of cells outside the scale.
import { useId } from 'react';
import { OFF_SCALE_COLOR, rampColor } from '../studio/colors.ts';

export type RampScale = 'linear' | 'sqrt';

/** Position on the colour ramp of a value, for a scale from 0 to max. */
export function rampPosition(x: number, max: number, scale: RampScale): number {
  if (max <= 0) return 0;
  return scale === 'sqrt' ? Math.sqrt(x / max) : x / max;
}

const WIDTH = 320;

export function RampLegend({
  max,
  scale,
  format,
  offScale,
  testId,
}: {
  max: number;
  scale: RampScale;
  /** A value as tick text (a percentage, a count). */
  format: (value: number) => string;
  /** What the grey swatch means here. */
  offScale: string;
  testId: string;
}) {
  const gradient = useId().replace(/:/g, '');
  const stops = Array.from({ length: 9 }, (_, i) => i / 8);
  const ticks = [0, 0.25, 0.5, 0.75, 1];
  const valueAt = (position: number): number => max * (scale === 'sqrt' ? position * position : position);
  const offWidth = Math.ceil(offScale.length * 6.8) + 24;
  return (
    <svg
      width={WIDTH + 24 + offWidth}
      height={44}
      role="img"
      aria-label={`Colour scale (${scale === 'sqrt' ? 'square root' : 'linear'}): ${format(0)} to ${format(max)}; grey: ${offScale}`}
      fontSize={11}
      data-testid={testId}
    >
      <defs>
        <linearGradient id={gradient}>
          {stops.map((s) => (
            <stop key={s} offset={s} stopColor={rampColor(s)} />
          ))}
        </linearGradient>
      </defs>
      <rect x={8} y={4} width={WIDTH} height={14} fill={`url(#${gradient})`} />
      {ticks.map((t) => (
        <text
          key={t}
          x={8 + t * WIDTH}
          y={32}
          textAnchor={t === 0 ? 'start' : t === 1 ? 'end' : 'middle'}
          fill="currentColor"
        >
          {format(valueAt(t))}
        </text>
      ))}
      <rect x={WIDTH + 24} y={4} width={14} height={14} fill={OFF_SCALE_COLOR} />
      <text x={WIDTH + 42} y={15} fill="currentColor">
        {offScale}
      </text>
    </svg>
  );
}
