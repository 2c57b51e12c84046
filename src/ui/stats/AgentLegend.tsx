// A chart legend in load order with text in the body colour (series colours are too light for text),
// swatches drawn as SVG so a PNG of the figure keeps them; optionally the unique/shared key.
import { useId } from 'react';
import { agentColor } from '../studio/colors.ts';
import { HatchPatterns, hatchId } from './HatchPattern.tsx';

export interface LegendItem {
  label: string;
  color: string;
}

export const agentItems = (labels: readonly string[]): LegendItem[] =>
  labels.map((label, t) => ({ label, color: agentColor(t) }));

function Swatch({ fill, stroke }: { fill: string; stroke?: string }) {
  return (
    <svg width="14" height="14" aria-hidden="true" className="studio-legend__swatch">
      <rect x="0.5" y="0.5" width="13" height="13" fill={fill} stroke={stroke ?? 'none'} />
    </svg>
  );
}

export function AgentLegend({ items, split = false }: { items: readonly LegendItem[]; split?: boolean }) {
  const patterns = useId().replace(/:/g, '');
  return (
    <ul className="studio-legend" aria-label="Legend">
      {items.map((item) => (
        <li key={item.label}>
          <Swatch fill={item.color} />
          {item.label}
        </li>
      ))}
      {split && (
        <>
          <li className="studio-legend__key">
            <svg width="0" height="0" aria-hidden="true" className="studio-legend__defs">
              <HatchPatterns prefix={patterns} colors={['#5b6675']} />
            </svg>
            <Swatch fill="#5b6675" />
            solid: unique
          </li>
          <li className="studio-legend__key">
            <Swatch fill={`url(#${hatchId(patterns, 0)})`} stroke="#5b6675" />
            striped: shared
          </li>
        </>
      )}
    </ul>
  );
}
