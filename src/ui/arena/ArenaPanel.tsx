// Step 5: for the demo architecture, the arena's task scores of the base, every agent and every
// merge of the session, played in the worker; a table and a bar chart per task.
import { useEffect } from 'react';
import { DEMO_MODEL_TYPE } from '../../worker/protocol.ts';
import { studioStore, useStudio } from '../../state/store.ts';
import { ErrorBox, idPart } from '../studio/common.tsx';
import { ChunkPlaceholder, deferred } from '../studio/deferred.tsx';
import { ARENA_CHART_HEIGHT, type ArenaChartProps } from './chart-props.ts';

// The chart and recharts come in a chunk of their own, asked for once the arena starts playing.
const Chart = deferred<ArenaChartProps>(() => import('./ArenaChart.tsx').then((m) => m.ArenaChart));

export function ArenaPanel() {
  const arena = useStudio((s) => s.studio.arena);
  const models = useStudio((s) => s.studio.models);
  const merges = useStudio((s) => s.studio.merges.length);
  const playable =
    models.length > 0 &&
    models.every((m) => m.status === 'ready' && m.report?.config?.modelType === DEMO_MODEL_TYPE);
  const rows = arena.result ?? [];
  const tasks = rows[0]?.scores.tasks.map((t) => t.name) ?? [];
  const running = arena.status === 'running';
  useEffect(() => {
    if (running) void Chart.preload();
  }, [running]);
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
            <Chart.View
              rows={rows}
              fallback={<ChunkPlaceholder testId="arena-chart-loading" height={`${ARENA_CHART_HEIGHT}px`} />}
            />
          </figure>
        </div>
      )}
    </section>
  );
}
