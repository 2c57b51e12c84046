// The studio's workflow, in order: models, statistics, merge, export, arena; the demo set loads on
// first mount so the page shows real numbers without any file chosen.
import { useEffect } from 'react';
import { studioStore } from '../../state/store.ts';
import { ArenaPanel } from './ArenaPanel.tsx';
import { ExportPanel } from './ExportPanel.tsx';
import { LoadPanel } from './LoadPanel.tsx';
import { MergePanel } from './MergePanel.tsx';
import { NonFinite } from './NonFinite.tsx';
import { StatsPanel } from './StatsPanel.tsx';
import './studio.css';

export function Studio() {
  useEffect(() => {
    // StrictMode mounts twice; only a studio with nothing loaded starts the demo.
    if (studioStore.getState().studio.source === 'none') void studioStore.getState().loadDemo();
  }, []);
  return (
    <div className="studio" data-testid="studio">
      <LoadPanel />
      <StatsPanel />
      <NonFinite />
      <MergePanel />
      <ExportPanel />
      <ArenaPanel />
    </div>
  );
}
