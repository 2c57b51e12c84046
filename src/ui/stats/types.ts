// Props the statistics views share: the analysis with its agent labels, and the tensor table's filter.
import type { AnalysisResult } from '../../driver/job.ts';
import type { TensorFilter } from './summary.ts';

export interface AnalysisProps {
  analysis: AnalysisResult;
  /** Agent labels in load order (the statistics' per-agent order). */
  labels: string[];
}

export interface DrillProps {
  filter: TensorFilter;
  onFilter(filter: TensorFilter): void;
}
