// Step 5: for the demo architecture, the arena's task scores of the base, every agent and every
// merge of the session, played in the worker; a table and a bar chart per task.
import { Bar, BarChart, CartesianGrid, Legend, ResponsiveContainer, Tooltip, XAxis, YAxis } from 'recharts';
import { DEMO_MODEL_TYPE } from '../../worker/protocol.ts';
import { studioStore, useStudio } from '../../state/store.ts';
import { agentColor, MERGE_COLOR, NEUTRAL_COLOR } from '../studio/colors.ts';
import { ErrorBox, idPart } from '../studio/common.tsx';

/** Agents take their colour from the studio's one agent map; the base and merges stay neutral. */
function rowColor(rows: readonly { kind: string }[], i: number): { fill: string; opacity: number } {
  const row = rows[i];
  if (row?.kind === 'agent')
    return { fill: agentColor(rows.slice(0, i).filter((r) => r.kind === 'agent').length), opacity: 1 };
  if (row?.kind === 'merge') {
    const merge = rows.slice(0, i).filter((r) => r.kind === 'merge').length;
    return { fill: MERGE_COLOR, opacity: 1 - 0.2 * (merge % 4) };
  }
  return { fill: NEUTRAL_COLOR, opacity: 1 };
}

export function ArenaPanel() {
  const arena = useStudio((s) => s.studio.arena);
  const models = useStudio((s) => s.studio.models);
  const merges = useStudio((s) => s.studio.merges.length);
  const playable =
    models.length > 0 &&
    models.every((m) => m.status === 'ready' && m.report?.config?.modelType === DEMO_MODEL_TYPE);
  const rows = arena.result ?? [];
  const tasks = rows[0]?.scores.tasks.map((t) => t.name) ?? [];
  const chartRows = tasks.map((task) => {
    const row: Record<string, string | number> = { task };
    for (const r of rows) row[r.label] = r.scores.tasks.find((t) => t.name === task)?.score ?? 0;
    return row;
  });
  return (
    <section
      className="panel"
      aria-labelledby="arena-heading"
      data-testid="arena-panel"
      data-status={arena.status}
    >
      <div className="panel__head">
        <h2 id="arena-heading">5. Evaluate in the arena</h2>
        <button
          type="button"
          className="button"
          data-testid="arena-run"
          disabled={!playable || arena.status === 'running'}
          onClick={() => void studioStore.getState().runArena()}
        >
          Score {models.length + merges} models
        </button>
      </div>
      <p className="muted">
        {playable
          ? 'Each model plays 200 fixed layouts per task greedily; a score is the mean episode score.'
          : `The arena plays models of the demo architecture (${DEMO_MODEL_TYPE}) only.`}
      </p>
      {arena.error && <ErrorBox error={arena.error} testId="arena-error" />}
      {rows.length > 0 && (
        <div className="studio-charts">
          <div className="studio-scroll">
            <table className="studio-table" data-testid="arena-table">
              <thead>
                <tr>
                  <th scope="col">Model</th>
                  {tasks.map((t) => (
                    <th key={t} scope="col">
                      {t}
                    </th>
                  ))}
                  <th scope="col">mean</th>
                </tr>
              </thead>
              <tbody>
                {rows.map((r) => (
                  <tr key={r.key} data-testid={`arena-row-${idPart(r.key)}`} data-kind={r.kind}>
                    <th scope="row">{r.label}</th>
                    {r.scores.tasks.map((t) => (
                      <td key={t.name} data-testid={`arena-score-${t.name}`}>
                        {t.score.toFixed(3)}
                      </td>
                    ))}
                    <td data-testid="arena-score-mean">{r.scores.mean.toFixed(3)}</td>
                  </tr>
                ))}
              </tbody>
            </table>
          </div>
          <figure className="card studio-chart" data-testid="chart-arena">
            <figcaption>
              <h3>Score per task</h3>
            </figcaption>
            <ResponsiveContainer width="100%" height={260}>
              <BarChart data={chartRows}>
                <CartesianGrid strokeDasharray="3 3" />
                <XAxis dataKey="task" />
                <YAxis domain={[0, 1]} />
                <Tooltip
                  formatter={(value) => (typeof value === 'number' ? value.toFixed(3) : String(value))}
                />
                <Legend />
                {rows.map((r, i) => (
                  <Bar
                    key={r.key}
                    dataKey={r.label}
                    fill={rowColor(rows, i).fill}
                    fillOpacity={rowColor(rows, i).opacity}
                    isAnimationActive={false}
                  />
                ))}
              </BarChart>
            </ResponsiveContainer>
          </figure>
        </div>
      )}
    </section>
  );
}
