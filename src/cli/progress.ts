// Progress on stderr: a redrawn bar on a terminal, a plain line every few seconds otherwise.
import type { Progress } from '../driver/job.ts';
import { formatBytes } from '../format/inspect.ts';

export function formatDuration(ms: number): string {
  const total = Math.round(ms / 1000);
  const h = Math.floor(total / 3600);
  const m = Math.floor((total % 3600) / 60);
  const s = total % 60;
  const mmss = `${String(m).padStart(h ? 2 : 1, '0')}:${String(s).padStart(2, '0')}`;
  return h ? `${h}:${mmss}` : mmss;
}

export function progressLine(p: Progress, width = 24): string {
  const fraction = p.bytesTotal > 0 ? p.bytesDone / p.bytesTotal : 1;
  const filled = Math.round(fraction * width);
  const bar = `${'█'.repeat(filled)}${'░'.repeat(width - filled)}`;
  const eta = p.etaMs === undefined ? '' : ` ETA ${formatDuration(p.etaMs)}`;
  return (
    `${p.stage.padEnd(7)} ${(fraction * 100).toFixed(0).padStart(3)}% ${bar} ` +
    `${formatBytes(p.bytesDone)}/${formatBytes(p.bytesTotal)} ${formatBytes(p.bytesPerSecond)}/s ` +
    `${p.tensorsDone}/${p.tensorsTotal} tensors${eta}`
  );
}

interface Stream {
  isTTY?: boolean;
  columns?: number;
  write(text: string): unknown;
}

export class ProgressPrinter {
  private lastPlain = 0;
  private lastStage = '';
  private drawn = false;

  constructor(private readonly stream: Stream) {}

  update(p: Progress): void {
    const line = progressLine(p);
    if (this.stream.isTTY) {
      const columns = this.stream.columns ?? 100;
      const tail = p.currentTensor ? ` ${p.currentTensor}` : '';
      this.stream.write(`\r${`${line}${tail}`.slice(0, columns - 1).padEnd(columns - 1)}`);
      this.drawn = true;
      return;
    }
    const now = Date.now();
    if (p.stage !== this.lastStage || now - this.lastPlain > 5000 || p.bytesDone === p.bytesTotal) {
      this.lastStage = p.stage;
      this.lastPlain = now;
      this.stream.write(`${line}\n`);
    }
  }

  done(): void {
    if (this.drawn) this.stream.write('\n');
    this.drawn = false;
  }
}
