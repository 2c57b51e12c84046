// CPU reference of the tensor view's mask grid (shaders/mask.wgsl), from SPEC.md: per element the set
// of agents with |τ| > ε; one agent is unique to it, two or more are shared, with a sign conflict when
// their τ do not all have one sign. An element whose models' bits differ and hold NaN or ±Inf is
// non-finite and counted apart; one every model stores with the same such bits is unchanged. Counted
// per block of the view's grid.

import { maskLayout, type MaskGeometry } from './mask-geometry.ts';
import { at, atF64 } from '../io/checked.ts';
import { taskVector } from './float32.ts';
import { scanNonFinite, type TensorValues } from './reference.ts';

/** The block counters of a whole tensor's values (laid out as maskLayout says). */
export function referenceMask(v: TensorValues, g: MaskGeometry, epsilon: number): Uint32Array {
  const eps = Math.fround(epsilon);
  const n = v.agents.length;
  const layout = maskLayout(n);
  const grid = new Uint32Array(g.gridRows * g.gridCols * layout.stride);
  const scan = scanNonFinite(v);
  const bump = (k: number): void => {
    grid[k] = at(grid, k, 'mask grid') + 1;
  };
  for (let r = 0; r < g.rows; r++) {
    for (let c = 0; c < g.cols; c++) {
      const i = (g.row0 + r) * g.tensorCols + g.col0 + c;
      const cell = (Math.floor(r / g.blockRows) * g.gridCols + Math.floor(c / g.blockCols)) * layout.stride;
      if (scan.nonFinite[i]) {
        bump(cell + layout.nonFinite);
        continue;
      }
      if (scan.kept[i]) continue;
      const base = atF64(v.base, i, 'base');
      const changed: number[] = [];
      let positive = false;
      let negative = false;
      for (let t = 0; t < n; t++) {
        const tau = taskVector(atF64(at(v.agents, t, 'agents'), i, 'agent'), base);
        if (!(Math.abs(tau) > eps)) continue;
        changed.push(t);
        if (tau > 0) positive = true;
        else negative = true;
      }
      if (changed.length === 0) continue;
      if (changed.length === 1) bump(cell + layout.unique + at(changed, 0));
      else if (positive && negative) bump(cell + layout.conflict);
      else bump(cell + layout.shared);
      for (const t of changed) bump(cell + layout.changed + t);
    }
  }
  return grid;
}
