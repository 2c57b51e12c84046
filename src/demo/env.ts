// The demo's task family: a 7×7 grid world with one shared observation and action space, where a
// task id says which of three goals ("key", "door", "gems") the episode rewards.
//
// Observation (binary, OBS_SIZE features): four egocentric object planes (key, door, gem, lava),
// each a 13×13 window centred on the agent so the whole grid is always in view, then a one-hot of the
// agent's absolute cell (so a policy can tell where the border is). The task id is not part of the
// observation vector: the policy reads it through its own embedding (`task_embed.weight`).

import { at } from '../io/checked.ts';
import { Rng } from './rng.ts';

export const GRID = 7;
export const CELLS = GRID * GRID;
/** Side of the egocentric window: offsets −(GRID−1)..(GRID−1) in both directions. */
export const WINDOW = 2 * GRID - 1;
export const PLANES = ['key', 'door', 'gem', 'lava'] as const;
export type Plane = (typeof PLANES)[number];
export const OBS_SIZE = PLANES.length * WINDOW * WINDOW + CELLS;
/** Offset of the agent-position one-hot in the observation. */
export const AGENT_OFFSET = PLANES.length * WINDOW * WINDOW;
/** The observation layout in words, for config.json. */
export const OBSERVATION_LAYOUT =
  `binary; ${PLANES.length} egocentric ${WINDOW}x${WINDOW} planes (${PLANES.join(', ')}), feature ` +
  `plane*${WINDOW * WINDOW} + (dr+${GRID - 1})*${WINDOW} + (dc+${GRID - 1}); then a one-hot of the agent cell ` +
  `(row*${GRID} + col) at ${AGENT_OFFSET}; task id through task_embed.weight`;

export const TASKS = ['key', 'door', 'gems'] as const;
export type TaskName = (typeof TASKS)[number];

export const TASK_INFO: Record<TaskName, string> = {
  key: 'Reach the key; stepping on the door (a decoy here) ends the episode with 0.',
  door: 'Reach the door; stepping on lava ends the episode with 0.',
  gems: 'Collect the 3 gems (score = share collected); stepping on lava ends the episode.',
};

/** Up, down, left, right as (row, column) steps. Moving into the border leaves the agent in place. */
export const ACTIONS = ['up', 'down', 'left', 'right'] as const;
export const NUM_ACTIONS = ACTIONS.length;
const ACTION_DR: readonly number[] = [-1, 1, 0, 0];
const ACTION_DC: readonly number[] = [0, 0, -1, 1];

/** Every episode ends after this many steps at the latest. */
export const MAX_STEPS = 24;

const DOOR_LAVA = 6;
const GEMS = 3;
const GEM_LAVA = 3;

/** One episode's mutable state. Cells are row-major indices 0..CELLS−1; −1 means absent. */
export interface Episode {
  readonly task: TaskName;
  readonly taskId: number;
  agent: number;
  key: number;
  door: number;
  /** Gems not yet collected, ascending. */
  gems: number[];
  /** lava[cell] is true where the cell is lava. */
  readonly lava: boolean[];
  steps: number;
  done: boolean;
  /** The episode's score so far, in [0, 1]. */
  score: number;
}

export function taskId(task: TaskName): number {
  return TASKS.indexOf(task);
}

export function isTaskName(value: unknown): value is TaskName {
  return typeof value === 'string' && (TASKS as readonly string[]).includes(value);
}

/** A fresh episode of `task`, fully determined by `seed`. Every goal is reachable without lava. */
export function createEpisode(task: TaskName, seed: number): Episode {
  const rng = new Rng(seed);
  for (;;) {
    const cells = shuffledCells(rng);
    let next = 0;
    // Objects take the shuffled cells in turn, so they never share a cell.
    const take = (): number => at(cells, next++, 'shuffled cells');
    const lava: boolean[] = new Array<boolean>(CELLS).fill(false);
    const episode: Episode = {
      task,
      taskId: taskId(task),
      agent: take(),
      key: -1,
      door: -1,
      gems: [],
      lava,
      steps: 0,
      done: false,
      score: 0,
    };
    if (task === 'key') {
      episode.key = take();
      episode.door = take();
    } else if (task === 'door') {
      episode.door = take();
      for (let i = 0; i < DOOR_LAVA; i++) lava[take()] = true;
    } else {
      for (let i = 0; i < GEMS; i++) episode.gems.push(take());
      episode.gems.sort((a, b) => a - b);
      for (let i = 0; i < GEM_LAVA; i++) lava[take()] = true;
    }
    // Redraw the (rare) layouts where lava walls a goal off, so that every episode can score 1.
    const goals = task === 'key' ? [episode.key] : task === 'door' ? [episode.door] : episode.gems;
    const reachable = reachableCells(episode.agent, lava);
    if (goals.every((goal) => reachable[goal])) return episode;
  }
}

function shuffledCells(rng: Rng): number[] {
  const cells = Array.from({ length: CELLS }, (_, i) => i);
  for (let i = CELLS - 1; i > 0; i--) {
    const j = rng.int(i + 1);
    const t = at(cells, i, 'cells');
    cells[i] = at(cells, j, 'cells');
    cells[j] = t;
  }
  return cells;
}

function reachableCells(start: number, lava: readonly boolean[]): boolean[] {
  const seen: boolean[] = new Array<boolean>(CELLS).fill(false);
  const queue = [start];
  seen[start] = true;
  for (let cell = queue.pop(); cell !== undefined; cell = queue.pop()) {
    for (let a = 0; a < NUM_ACTIONS; a++) {
      const to = move(cell, a);
      if (!seen[to] && !lava[to]) {
        seen[to] = true;
        queue.push(to);
      }
    }
  }
  return seen;
}

/** The cell reached from `cell` by action `a` (the same cell when the move hits the border). */
export function move(cell: number, a: number): number {
  const r = Math.floor(cell / GRID) + at(ACTION_DR, a, 'action');
  const c = (cell % GRID) + at(ACTION_DC, a, 'action');
  if (r < 0 || r >= GRID || c < 0 || c >= GRID) return cell;
  return r * GRID + c;
}

/** Index of plane `plane` at offset (dr, dc) from the agent. */
export function planeFeature(plane: number, dr: number, dc: number): number {
  return plane * WINDOW * WINDOW + (dr + GRID - 1) * WINDOW + (dc + GRID - 1);
}

/** The observation's active (= 1) features, ascending; every other feature is 0. */
export function observe(episode: Episode): number[] {
  const ar = Math.floor(episode.agent / GRID);
  const ac = episode.agent % GRID;
  const at = (plane: number, cell: number): number =>
    planeFeature(plane, Math.floor(cell / GRID) - ar, (cell % GRID) - ac);
  const active: number[] = [];
  if (episode.key >= 0) active.push(at(0, episode.key));
  if (episode.door >= 0) active.push(at(1, episode.door));
  for (const gem of episode.gems) active.push(at(2, gem));
  for (let cell = 0; cell < CELLS; cell++) if (episode.lava[cell]) active.push(at(3, cell));
  active.push(AGENT_OFFSET + episode.agent);
  return active.sort((a, b) => a - b);
}

/** The same observation as a dense 0/1 vector. */
export function observeDense(episode: Episode): Float32Array {
  const dense = new Float32Array(OBS_SIZE);
  for (const i of observe(episode)) dense[i] = 1;
  return dense;
}

/** Applies action `a` and returns the reward (the increase of the score). */
export function step(episode: Episode, a: number): number {
  if (episode.done) throw new Error('step: the episode is over; create a new one');
  if (!Number.isInteger(a) || a < 0 || a >= NUM_ACTIONS) throw new RangeError(`step: bad action ${a}`);
  const before = episode.score;
  const to = move(episode.agent, a);
  episode.agent = to;
  episode.steps += 1;
  if (episode.task === 'key') {
    if (to === episode.key) {
      episode.key = -1;
      episode.score = 1;
      episode.done = true;
    } else if (to === episode.door) episode.done = true;
  } else if (episode.task === 'door') {
    if (to === episode.door) {
      episode.score = 1;
      episode.done = true;
    } else if (episode.lava[to]) episode.done = true;
  } else {
    const g = episode.gems.indexOf(to);
    if (g >= 0) {
      episode.gems.splice(g, 1);
      episode.score = (GEMS - episode.gems.length) / GEMS;
      if (episode.gems.length === 0) episode.done = true;
    } else if (episode.lava[to]) episode.done = true;
  }
  if (episode.steps >= MAX_STEPS) episode.done = true;
  return episode.score - before;
}

/**
 * The scripted "general" behaviour the base imitates: walk to the nearest object of any kind
 * (key, door or gem; ties to the lower cell), longer axis first, blind to lava and to the task.
 */
export function generalAction(episode: Episode): number {
  const targets = [episode.key, episode.door, ...episode.gems].filter((cell) => cell >= 0);
  const ar = Math.floor(episode.agent / GRID);
  const ac = episode.agent % GRID;
  let best = -1;
  let bestDistance = Infinity;
  for (const cell of targets.sort((a, b) => a - b)) {
    const d = Math.abs(Math.floor(cell / GRID) - ar) + Math.abs((cell % GRID) - ac);
    if (d < bestDistance) {
      best = cell;
      bestDistance = d;
    }
  }
  if (best < 0) return 0;
  const dr = Math.floor(best / GRID) - ar;
  const dc = (best % GRID) - ac;
  if (Math.abs(dr) >= Math.abs(dc)) return dr < 0 ? 0 : 1;
  return dc < 0 ? 2 : 3;
}
