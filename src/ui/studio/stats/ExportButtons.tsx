// Save buttons for one figure or table: PNG of what is drawn, CSV of the table's rows.
import { useState, type RefObject } from 'react';
import { downloadBlob, figurePng, tableRows, toCsv } from './export.ts';

export function ExportButtons({
  target,
  name,
  png = false,
  csv = false,
}: {
  target: RefObject<HTMLElement | null>;
  /** File name stem, also in the buttons' accessible names. */
  name: string;
  png?: boolean;
  csv?: boolean;
}) {
  const [error, setError] = useState<string | null>(null);
  const savePng = async (): Promise<void> => {
    const element = target.current;
    if (!element) return;
    try {
      downloadBlob(await figurePng(element), `${name}.png`);
      setError(null);
    } catch (cause) {
      setError(cause instanceof Error ? cause.message : String(cause));
    }
  };
  const saveCsv = (): void => {
    const table = target.current?.querySelector('table');
    if (!table) return;
    downloadBlob(new Blob([toCsv(tableRows(table))], { type: 'text/csv' }), `${name}.csv`);
  };
  return (
    <span className="studio-save" data-export-skip="">
      {png && (
        <button
          type="button"
          className="studio-save__button"
          aria-label={`Save ${name} as PNG`}
          data-testid="save-png"
          onClick={() => void savePng()}
        >
          PNG
        </button>
      )}
      {csv && (
        <button
          type="button"
          className="studio-save__button"
          aria-label={`Save ${name} as CSV`}
          data-testid="save-csv"
          onClick={saveCsv}
        >
          CSV
        </button>
      )}
      {error && (
        <span role="alert" className="studio-save__error">
          {error}
        </span>
      )}
    </span>
  );
}
