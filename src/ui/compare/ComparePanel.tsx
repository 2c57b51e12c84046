// Two merges side by side, from this session or from the library: their parameters, λ, the elements
// each branch took (what a sparsifying merge summed, counted in it; otherwise the statistics the merge
// used; merge-branches.ts), the share of elements that differ per layer
// (read from both merged models in the worker), and arena scores with their deltas where both were
// scored.
import { useId, useMemo, useState, type ReactNode } from 'react';
import { useShallow } from 'zustand/react/shallow';
import { parseBranches, type MergeBranches } from '../../driver/merge-branches.ts';
import type { LibraryEntry } from '../../worker/protocol.ts';
import { cardLambdas } from '../../driver/library.ts';
import { readsParam } from '../../methods/defaults.ts';
import { parseMergekitYaml } from '../../methods/recipe.ts';
import type { MethodParams } from '../../methods/types.ts';
import { USER_PARAMS, type ParameterKey } from '../../methods/params.ts';
import { studioStore, useStudio } from '../../state/store.ts';
import { mergeKey, type MergeRecord, type StudioData } from '../../state/studio-slice.ts';
import { formatCount } from '../format.ts';
import { at, must } from '../../io/checked.ts';
import { ErrorBox, idPart } from '../studio/common.tsx';
import { pickCompareData } from '../merge/picks.ts';
import { branchCounts, layerOf, percent } from '../stats/summary.ts';

interface Candidate {
  key: string;
  label: string;
  params: MethodParams | null;
  lambdas: number[] | null;
  branches: MergeBranches | null;
  arenaKey: string | null;
}

/** Complete merges of the library and of this session, each once. */
function candidates(data: Pick<StudioData, 'merges' | 'library'>): Candidate[] {
  const records = new Map<string, MergeRecord>(data.merges.map((m) => [mergeKey(m), m]));
  const fromRecord = (m: MergeRecord): Candidate => ({
    key: mergeKey(m),
    label: `${m.name} · merge ${m.id} (${m.params.method})`,
    params: m.params,
    lambdas: m.lambdas,
    branches: m.branches,
    arenaKey: `merge-${m.id}`,
  });
  const fromEntry = (e: LibraryEntry): Candidate => {
    let params: MethodParams | null = null;
    try {
      params = e.recipe ? parseMergekitYaml(e.recipe, e.folder).params : null;
    } catch {
      // A recipe this version cannot read: the parameters are just not shown.
    }
    return {
      key: `opfs:${e.folder}`,
      label: e.name ?? e.folder,
      params,
      // No session record after a reload: the card keeps the λ the merge used.
      lambdas: cardLambdas(e.card),
      branches: parseBranches(e.branches),
      arenaKey: null,
    };
  };
  const list: Candidate[] = [...records.values()].map(fromRecord);
  for (const e of data.library.result ?? [])
    if (e.status === 'complete' && !records.has(`opfs:${e.folder}`)) list.push(fromEntry(e));
  return list;
}

/** The method, then every parameter a user sets (the specs' table, src/methods/params.ts). */
const PARAM_ROWS: (keyof MethodParams)[] = ['method', ...USER_PARAMS];

/** Whether a merge's method reads the parameter (PARAM_SPECS, each method's descriptor). */
const usedBy = (params: MethodParams | null, name: keyof MethodParams): boolean =>
  params !== null && name !== 'method' && readsParam(params.method, name as ParameterKey);

const show = (value: unknown): string =>
  value === undefined ? '—' : Array.isArray(value) ? value.join(', ') : String(value);

function Picker({
  id,
  label,
  value,
  options,
  onChange,
  testId,
}: {
  id: string;
  label: string;
  value: string;
  options: Candidate[];
  onChange(value: string): void;
  testId: string;
}) {
  return (
    <div className="studio-field">
      <label htmlFor={id}>{label}</label>
      <select
        id={id}
        value={value}
        data-testid={testId}
        onChange={(event) => onChange(event.currentTarget.value)}
      >
        {options.map((c) => (
          <option key={c.key} value={c.key}>
            {c.label}
          </option>
        ))}
      </select>
    </div>
  );
}

export function ComparePanel() {
  const data = useStudio(useShallow(pickCompareData));
  const { merges, library } = data;
  const options = useMemo(() => candidates({ merges, library }), [merges, library]);
  const idA = useId();
  const idB = useId();
  const [a, setA] = useState<string | null>(null);
  const [b, setB] = useState<string | null>(null);
  if (options.length < 2) return null;
  const keyA = a && options.some((c) => c.key === a) ? a : at(options, 0, 'merges to compare').key;
  const keyB = b && options.some((c) => c.key === b) ? b : at(options, 1, 'merges to compare').key;
  const byKey = (key: string): Candidate =>
    must(
      options.find((c) => c.key === key),
      key,
    );
  const left = byKey(keyA);
  const right = byKey(keyB);
  const { comparison } = data;
  const current = comparison.pair?.[0] === keyA && comparison.pair[1] === keyB;
  const arena = data.arena.result ?? [];
  const scoresA = arena.find((r) => r.key === left.arenaKey)?.scores;
  const scoresB = arena.find((r) => r.key === right.arenaKey)?.scores;
  return (
    <section
      className="card card--wide studio-compare"
      aria-labelledby="compare-heading"
      data-testid="compare-panel"
    >
      <h3 id="compare-heading">Compare two merges</h3>
      <div className="studio-compare__pick">
        <Picker id={idA} label="First" value={keyA} options={options} onChange={setA} testId="compare-a" />
        <Picker id={idB} label="Second" value={keyB} options={options} onChange={setB} testId="compare-b" />
        <button
          type="button"
          className="button button--secondary"
          data-testid="compare-run"
          disabled={keyA === keyB || comparison.status === 'running'}
          onClick={() => void studioStore.getState().compareMerges(keyA, keyB)}
        >
          Compare
        </button>
      </div>
      <CompareTable
        testId="compare-params"
        rowTestId="compare-param"
        caption="Parameters"
        head="Parameter"
        rows={[
          // A parameter gets a row where either merge's method reads it (each method's descriptor);
          // the other merge shows '—' for one its method does not read.
          ...PARAM_ROWS.filter(
            (name) => name === 'method' || usedBy(left.params, name) || usedBy(right.params, name),
          ).map((name) => ({
            key: name,
            label: name,
            a: name === 'method' || usedBy(left.params, name) ? show(left.params?.[name]) : '—',
            b: name === 'method' || usedBy(right.params, name) ? show(right.params?.[name]) : '—',
          })),
          {
            key: 'lambdas',
            label: 'λ per agent',
            a: left.lambdas?.map((l) => l.toFixed(4)).join(', ') ?? '—',
            b: right.lambdas?.map((l) => l.toFixed(4)).join(', ') ?? '—',
          },
        ]}
      />
      {(left.branches || right.branches) && (
        <>
          <CompareTable
            testId="compare-branches"
            rowTestId="compare-branch"
            caption="Elements per branch"
            head="Branch"
            delta={(a, b) => signed(b - a, 0)}
            rows={branchRows(left.branches, right.branches)}
          />
          <p className="muted" data-testid="compare-branch-legend">
            <strong>Counted in the merge</strong> (TIES, DARE, Breadcrumbs): the agents each element's output
            summed after the top-k, random drop or band and the sign election; a sign conflict is an element
            with agents of both signs left. <strong>Statistics at ε</strong> (RAM, RAM+, linear, task
            arithmetic): the agents whose |τ| &gt; ε, which RAM averages.
          </p>
        </>
      )}
      {scoresA && scoresB && (
        <CompareTable
          testId="compare-arena"
          rowTestId="compare-arena"
          caption="Arena scores"
          head="Task"
          delta={(a, b) => signed(b - a, 3)}
          rows={[
            ...scoresA.tasks.map((t) => ({
              name: t.name,
              a: t.score,
              b: scoresB.tasks.find((u) => u.name === t.name)?.score,
            })),
            { name: 'mean', a: scoresA.mean, b: scoresB.mean },
          ].map(({ name, a, b }) => ({
            key: idPart(name),
            label: name,
            a: a.toFixed(3),
            b: b?.toFixed(3) ?? '—',
            values: b === undefined ? undefined : [a, b],
          }))}
        />
      )}
      {current && comparison.status === 'running' && <p className="muted">Reading both merges…</p>}
      {current && comparison.error && <ErrorBox error={comparison.error} testId="compare-error" />}
      {current && comparison.result && (
        <LayerDiff tensors={comparison.result.tensors} unmatched={comparison.result.unmatched} />
      )}
    </section>
  );
}

interface CompareRow {
  key: string;
  label: string;
  a: ReactNode;
  b: ReactNode;
  /** The numbers the Δ column is computed from, when both sides have one. */
  values?: [number, number];
}

const signed = (value: number, digits: number): string =>
  `${value >= 0 ? '+' : ''}${digits === 0 ? formatCount(value) : value.toFixed(digits)}`;

/** One comparison table: a row per item, the first merge's value, the second's, and Δ when it applies. */
function CompareTable({
  testId,
  rowTestId,
  caption,
  head,
  rows,
  delta,
}: {
  testId: string;
  rowTestId: string;
  caption: string;
  head: string;
  rows: CompareRow[];
  delta?: (a: number, b: number) => string;
}) {
  return (
    <table className="studio-table studio-table--compact" data-testid={testId}>
      <caption>{caption}</caption>
      <thead>
        <tr>
          <th scope="col">{head}</th>
          <th scope="col">First</th>
          <th scope="col">Second</th>
          {delta && <th scope="col">Δ (second − first)</th>}
        </tr>
      </thead>
      <tbody>
        {rows.map((row) => (
          <tr
            key={row.key}
            data-testid={`${rowTestId}-${row.key}`}
            data-differs={String(row.a !== row.b)}
            data-a={row.values?.[0]}
            data-b={row.values?.[1]}
          >
            <th scope="row">{row.label}</th>
            <td>{row.a}</td>
            <td>{row.b}</td>
            {delta && <td>{row.values ? delta(row.values[0], row.values[1]) : '—'}</td>}
          </tr>
        ))}
      </tbody>
    </table>
  );
}

/** Unchanged, unique (all, then per agent by label), shared and sign conflicts, as exact counts. */
function branchRows(a: MergeBranches | null, b: MergeBranches | null): CompareRow[] {
  const side = (branches: MergeBranches | null) => {
    if (!branches) return null;
    const counts = branchCounts(branches);
    return new Map<string, number>([
      // A merge-counted file keeps the merge's ε, which the sparsifying methods do not use: not shown.
      ...(branches.source === 'merge' ? [] : [['epsilon', branches.epsilon] as [string, number]]),
      ['numel', branches.numel],
      ['unchanged', counts.unchanged],
      ['unique', counts.unique],
      ...branches.agents.map((label, t): [string, number] => [`unique-${label}`, branches.unique[t] ?? 0]),
      ['shared', counts.shared],
      ['sign-conflicts', branches.signConflicts],
    ]);
  };
  const [left, right] = [side(a), side(b)];
  const keys = [...new Set([...(left?.keys() ?? []), ...(right?.keys() ?? [])])];
  const source = (branches: MergeBranches | null): string =>
    !branches ? '—' : branches.source === 'merge' ? 'counted in the merge' : 'statistics at ε';
  const label = (key: string): string =>
    key === 'epsilon'
      ? 'ε'
      : key === 'numel'
        ? 'elements'
        : key.startsWith('unique-')
          ? `unique to ${key.slice('unique-'.length)}`
          : key === 'sign-conflicts'
            ? 'sign conflicts'
            : key;
  // ε is a parameter, not a count: shown as written, no Δ.
  const cell = (key: string, value: number | undefined): string =>
    value === undefined ? '—' : key === 'epsilon' ? String(value) : formatCount(value);
  const counted: CompareRow = { key: 'source', label: 'counted from', a: source(a), b: source(b) };
  return [
    counted,
    ...keys.map((key): CompareRow => {
      const va = left?.get(key);
      const vb = right?.get(key);
      return {
        key: idPart(key),
        label: label(key),
        a: cell(key, va),
        b: cell(key, vb),
        values: va === undefined || vb === undefined || key === 'epsilon' ? undefined : [va, vb],
      };
    }),
  ];
}

/** Per layer: the share of elements whose values differ between the two merges. */
function LayerDiff({
  tensors,
  unmatched,
}: {
  tensors: { name: string; numel: number; differ: number }[];
  unmatched: string[];
}) {
  const layers = new Map<string, { numel: number; differ: number }>();
  for (const t of tensors) {
    const key = layerOf(t.name);
    const row = layers.get(key) ?? { numel: 0, differ: 0 };
    row.numel += t.numel;
    row.differ += t.differ;
    layers.set(key, row);
  }
  const collator = new Intl.Collator('en', { numeric: true });
  const rows = [...layers].sort(([x], [y]) => collator.compare(x, y));
  const total = tensors.reduce((s, t) => ({ numel: s.numel + t.numel, differ: s.differ + t.differ }), {
    numel: 0,
    differ: 0,
  });
  return (
    <div className="studio-scroll studio-scroll--tall">
      <table className="studio-table studio-table--compact" data-testid="compare-layers">
        <caption>Elements that differ, per layer</caption>
        <thead>
          <tr>
            <th scope="col">Layer</th>
            <th scope="col">Elements</th>
            <th scope="col">Differ</th>
            <th scope="col">Share</th>
          </tr>
        </thead>
        <tbody>
          {rows.map(([layer, row]) => (
            <tr
              key={layer}
              data-testid="compare-layer"
              data-layer={layer}
              data-differ={row.differ}
              data-numel={row.numel}
            >
              <th scope="row">{layer}</th>
              <td>{formatCount(row.numel)}</td>
              <td>{formatCount(row.differ)}</td>
              <td>{percent(row.differ, row.numel)}%</td>
            </tr>
          ))}
          <tr data-testid="compare-layer-sum">
            <th scope="row">Σ</th>
            <td>{formatCount(total.numel)}</td>
            <td>{formatCount(total.differ)}</td>
            <td>{percent(total.differ, total.numel)}%</td>
          </tr>
        </tbody>
      </table>
      {unmatched.length > 0 && (
        <p className="muted">Not compared (in one merge only, or another shape): {unmatched.join(', ')}</p>
      )}
    </div>
  );
}
