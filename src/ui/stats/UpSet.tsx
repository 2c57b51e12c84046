// UpSet-style view of the exact agent sets: one column per set of agents that changed the same
// elements (bar: how many; dots: which agents), largest first, for N ≤ 8 (see agentSets).
import { useRef } from 'react';
import type { ModelStats } from '../../methods/stats.ts';
import { formatCompact, formatCount } from '../format.ts';
import { agentColor, NEUTRAL_COLOR } from '../studio/colors.ts';
import { agentSets, setMembers } from './summary.ts';
import { ExportButtons } from './ExportButtons.tsx';

const FONT = 11;

export function UpSet({ totals, labels }: { totals: ModelStats; labels: string[] }) {
  const figure = useRef<HTMLElement>(null);
  const sets = agentSets(totals);
  const n = labels.length;
  const columns = sets
    ? [...sets].filter(([, count]) => count > 0).sort((x, y) => y[1] - x[1] || x[0] - y[0])
    : [];
  const labelW = Math.ceil(Math.max(...labels.map((l) => l.length), 4) * 6.8) + 12;
  const colW = 30;
  const barH = 150;
  const top = 18;
  const dotsTop = top + barH + 10;
  const rowH = 18;
  const width = labelW + columns.length * colW + 8;
  const height = dotsTop + n * rowH + 4;
  const max = Math.max(1, ...columns.map(([, c]) => c));
  return (
    <figure className="card studio-chart" data-testid="upset" ref={figure}>
      <figcaption className="studio-chart__head">
        <h3>Agent sets: elements changed by exactly these agents</h3>
        {sets && <ExportButtons target={figure} name="agent-sets" png />}
      </figcaption>
      {sets ? (
        <div className="studio-scroll">
          <svg
            width={width}
            height={height}
            role="img"
            aria-label={`Elements per exact set of agents: ${columns
              .map(
                ([mask, count]) =>
                  `${setMembers(mask, n)
                    .map((t) => labels[t])
                    .join(' + ')} ${formatCount(count)}`,
              )
              .join('; ')}`}
            fontSize={FONT}
          >
            {columns.map(([mask, count], i) => {
              const h = Math.max(1, (count / max) * barH);
              const x = labelW + i * colW;
              const members = setMembers(mask, n);
              return (
                <g
                  key={mask}
                  data-testid="upset-set"
                  data-agents={JSON.stringify(members)}
                  data-count={count}
                >
                  <title>{`${members.map((t) => labels[t]).join(' + ')} only: ${formatCount(count)}`}</title>
                  <rect x={x + 6} y={top + barH - h} width={colW - 12} height={h} fill={NEUTRAL_COLOR} />
                  <text
                    x={x + colW / 2}
                    y={top + barH - h - 4}
                    textAnchor="middle"
                    fill="currentColor"
                    fontSize={9}
                  >
                    {formatCompact(count)}
                  </text>
                  {members.length > 1 && (
                    <line
                      x1={x + colW / 2}
                      x2={x + colW / 2}
                      y1={dotsTop + members[0]! * rowH + rowH / 2}
                      y2={dotsTop + members[members.length - 1]! * rowH + rowH / 2}
                      stroke="currentColor"
                      strokeWidth={2}
                    />
                  )}
                  {labels.map((_, t) => (
                    <circle
                      key={t}
                      cx={x + colW / 2}
                      cy={dotsTop + t * rowH + rowH / 2}
                      r={5}
                      fill={members.includes(t) ? agentColor(t) : '#e3e6eb'}
                      stroke={members.includes(t) ? 'currentColor' : 'none'}
                    />
                  ))}
                </g>
              );
            })}
            {labels.map((label, t) => (
              <text
                key={label}
                x={labelW - 8}
                y={dotsTop + t * rowH + rowH / 2}
                textAnchor="end"
                dominantBaseline="central"
                fill="currentColor"
              >
                {label}
              </text>
            ))}
          </svg>
        </div>
      ) : (
        <p className="muted" data-testid="upset-unavailable">
          The statistics count every exact agent set for up to 8 agents. With {labels.length} agents there are
          too many sets to count, so they are not shown; the k-histogram and the overlap counts are exact.
        </p>
      )}
    </figure>
  );
}
