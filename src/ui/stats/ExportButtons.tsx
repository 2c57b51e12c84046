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
  const buttons = [
    { format: 'PNG', shown: png, save: () => void savePng() },
    { format: 'CSV', shown: csv, save: saveCsv },
  ];
  return (
    <span className="studio-save" data-export-skip="">
      {buttons
        .filter((b) => b.shown)
        .map(({ format, save }) => (
          <button
            key={format}
            type="button"
            className="studio-save__button"
            aria-label={`Save ${name} as ${format}`}
            data-testid={`save-${format.toLowerCase()}`}
            onClick={save}
          >
            {format}
          </button>
        ))}
      {error && (
        <span role="alert" className="studio-save__error">
          {error}
        </span>
      )}
    </span>
  );
}
