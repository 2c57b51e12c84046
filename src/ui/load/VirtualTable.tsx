// A table that renders only the rows in view (plus a margin), so a list of 300,000 tensors scrolls
// like one of 30: rows have one fixed height and spacer rows stand in for the rest.
import { useState, type ReactNode } from 'react';

export interface VirtualColumn<T> {
  header: ReactNode;
  cell(row: T): ReactNode;
  /** A row header cell (<th scope="row">) rather than a data cell. */
  rowHeader?: boolean;
}

/** Rows rendered beyond the visible ones on each side, so fast scrolling shows no gap. */
const OVERSCAN = 8;

/** The slice of rows [first, last) to render for a scroll position. Pure, for tests. */
export function visibleRange(
  count: number,
  scrollTop: number,
  viewport: number,
  rowHeight: number,
): { first: number; last: number } {
  const first = Math.max(0, Math.floor(scrollTop / rowHeight) - OVERSCAN);
  const last = Math.min(count, Math.ceil((scrollTop + viewport) / rowHeight) + OVERSCAN);
  return { first, last: Math.max(first, last) };
}

export function VirtualTable<T>({
  rows,
  columns,
  rowKey,
  caption,
  testId,
  rowTestId,
  rowHeight = 30,
  height = 320,
}: {
  rows: readonly T[];
  columns: VirtualColumn<T>[];
  rowKey(row: T, index: number): string;
  caption?: ReactNode;
  testId?: string;
  rowTestId?: string;
  rowHeight?: number;
  height?: number;
}) {
  const [scrollTop, setScrollTop] = useState(0);
  const viewport = Math.min(height, rows.length * rowHeight + rowHeight);
  const { first, last } = visibleRange(rows.length, scrollTop, viewport, rowHeight);
  const spacer = (px: number, key: string) =>
    px > 0 ? (
      <tr key={key} aria-hidden="true" style={{ height: px }}>
        <td colSpan={columns.length} className="virtual-table__spacer" />
      </tr>
    ) : null;
  return (
    <div
      className="studio-scroll virtual-table"
      style={{ maxHeight: height + rowHeight }}
      // The scroll box is reachable by keyboard, so its rows can be scrolled without a mouse.
      tabIndex={0}
      role="region"
      aria-label={typeof caption === 'string' ? caption : 'Table'}
      onScroll={(event) => setScrollTop(event.currentTarget.scrollTop)}
    >
      <table
        className="studio-table"
        data-testid={testId}
        data-rows={rows.length}
        aria-rowcount={rows.length + 1}
      >
        {caption !== undefined && <caption className="visually-hidden">{caption}</caption>}
        <thead>
          <tr aria-rowindex={1}>
            {columns.map((column, c) => (
              <th key={c} scope="col">
                {column.header}
              </th>
            ))}
          </tr>
        </thead>
        <tbody>
          {spacer(first * rowHeight, 'before')}
          {rows.slice(first, last).map((row, i) => (
            <tr
              key={rowKey(row, first + i)}
              style={{ height: rowHeight }}
              aria-rowindex={first + i + 2}
              data-testid={rowTestId}
            >
              {columns.map((column, c) =>
                column.rowHeader ? (
                  <th key={c} scope="row">
                    {column.cell(row)}
                  </th>
                ) : (
                  <td key={c}>{column.cell(row)}</td>
                ),
              )}
            </tr>
          ))}
          {spacer((rows.length - last) * rowHeight, 'after')}
        </tbody>
      </table>
    </div>
  );
}
