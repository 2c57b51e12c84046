import { describe, expect, it } from 'vitest';
import { at } from '../io/checked.ts';
import {
  AGENT_OFFSET,
  CELLS,
  createEpisode,
  generalAction,
  GRID,
  MAX_STEPS,
  move,
  observe,
  observeDense,
  OBS_SIZE,
  planeFeature,
  step,
  TASKS,
  type Episode,
} from './env.ts';

const cell = (r: number, c: number): number => r * GRID + c;

/** A hand-made episode (the generator's layouts are random). */
function episode(task: Episode['task'], parts: Partial<Episode>): Episode {
  return {
    task,
    taskId: TASKS.indexOf(task),
    agent: cell(3, 3),
    key: -1,
    door: -1,
    gems: [],
    lava: new Array<boolean>(CELLS).fill(false),
    steps: 0,
    done: false,
    score: 0,
    ...parts,
  };
}

function shortestPath(e: Episode, goal: number): number {
  const dist = new Array<number>(CELLS).fill(-1);
  dist[e.agent] = 0;
  const queue = [e.agent];
  // The queue grows while it is walked: for..of sees the cells pushed on the way.
  for (const from of queue) {
    for (let a = 0; a < 4; a++) {
      const to = move(from, a);
      if (dist[to] === -1 && !e.lava[to]) {
        dist[to] = at(dist, from) + 1;
        queue.push(to);
      }
    }
  }
  return at(dist, goal);
}

describe('createEpisode', () => {
  it('is a function of the seed', () => {
    for (const task of TASKS) {
      expect(createEpisode(task, 99)).toEqual(createEpisode(task, 99));
      const layouts = new Set(Array.from({ length: 20 }, (_, s) => JSON.stringify(createEpisode(task, s))));
      expect(layouts.size).toBeGreaterThan(15);
    }
  });

  it('places the objects of each task on distinct cells, with every goal reachable without lava', () => {
    for (let seed = 0; seed < 300; seed++) {
      const k = createEpisode('key', seed);
      expect(new Set([k.agent, k.key, k.door]).size).toBe(3);
      expect(k.gems).toEqual([]);
      expect(k.lava.some(Boolean)).toBe(false);

      const d = createEpisode('door', seed);
      expect(d.key).toBe(-1);
      expect(d.lava.filter(Boolean).length).toBe(6);
      expect(d.lava[d.agent] || d.lava[d.door]).toBe(false);
      expect(shortestPath(d, d.door)).toBeGreaterThan(0);

      const g = createEpisode('gems', seed);
      expect(g.gems.length).toBe(3);
      expect(g.door).toBe(-1);
      expect(new Set([g.agent, ...g.gems]).size).toBe(4);
      for (const gem of g.gems) expect(shortestPath(g, gem)).toBeGreaterThan(0);
    }
  });
});

describe('observe', () => {
  it('puts each object at its offset from the agent and the agent cell in the one-hot', () => {
    const e = episode('key', { agent: cell(1, 5), key: cell(4, 0), door: cell(1, 6) });
    expect(observe(e)).toEqual(
      [planeFeature(0, 3, -5), planeFeature(1, 0, 1), AGENT_OFFSET + cell(1, 5)].sort((a, b) => a - b),
    );
    const dense = observeDense(e);
    expect(dense.length).toBe(OBS_SIZE);
    expect(dense.reduce((a, b) => a + b, 0)).toBe(3);
  });

  it('keeps every feature of every reachable layout inside the observation', () => {
    const corner = episode('gems', { agent: cell(0, 0), gems: [cell(6, 6)] });
    corner.lava[cell(6, 5)] = true;
    const features = observe(corner);
    expect(features).toContain(planeFeature(2, 6, 6));
    expect(features).toContain(planeFeature(3, 6, 5));
    expect(Math.max(...features)).toBeLessThan(OBS_SIZE);
    expect(planeFeature(3, 6, 6)).toBeLessThan(AGENT_OFFSET);
  });
});

describe('step', () => {
  it('scores the key, and the door decoy ends a key episode with 0', () => {
    const win = episode('key', { agent: cell(3, 3), key: cell(3, 4), door: cell(2, 3) });
    expect(step(win, 3)).toBe(1);
    expect(win.done && win.score === 1).toBe(true);
    const lose = episode('key', { agent: cell(3, 3), key: cell(3, 4), door: cell(2, 3) });
    expect(step(lose, 0)).toBe(0);
    expect(lose.done && lose.score === 0).toBe(true);
    expect(() => step(lose, 0)).toThrow(/over/);
  });

  it('ends a door episode on lava with 0 and on the door with 1', () => {
    const e = episode('door', { agent: cell(3, 3), door: cell(3, 5) });
    e.lava[cell(4, 3)] = true;
    expect(step(e, 3)).toBe(0);
    expect(e.done).toBe(false);
    expect(step(e, 3)).toBe(1);
    const burnt = episode('door', { agent: cell(3, 3), door: cell(3, 5) });
    burnt.lava[cell(4, 3)] = true;
    step(burnt, 1);
    expect(burnt.done && burnt.score === 0).toBe(true);
  });

  it('scores gems by share collected, keeps them when lava ends the episode', () => {
    const e = episode('gems', { agent: cell(0, 0), gems: [cell(0, 1), cell(0, 2), cell(6, 6)] });
    e.lava[cell(0, 3)] = true;
    expect(step(e, 3)).toBeCloseTo(1 / 3, 12);
    expect(step(e, 3)).toBeCloseTo(1 / 3, 12);
    expect(e.gems).toEqual([cell(6, 6)]);
    expect(step(e, 3)).toBe(0);
    expect(e.done).toBe(true);
    expect(e.score).toBeCloseTo(2 / 3, 12);
  });

  it('leaves the agent in place at the border and stops after MAX_STEPS', () => {
    const e = episode('key', { agent: cell(0, 0), key: cell(6, 6), door: cell(5, 6) });
    for (let i = 0; i < MAX_STEPS - 1; i++) {
      step(e, 0);
      expect(e.agent).toBe(cell(0, 0));
      expect(e.done).toBe(false);
    }
    step(e, 2);
    expect(e.done && e.score === 0).toBe(true);
    expect(() => step(episode('key', { key: 0 }), 4)).toThrow(RangeError);
  });
});

describe('generalAction (the base behaviour)', () => {
  it('walks to the nearest object of any kind, longer axis first, blind to lava and to the task', () => {
    const e = episode('key', { agent: cell(3, 3), key: cell(0, 2), door: cell(5, 4) });
    expect(generalAction(e)).toBe(1);
    const d = episode('door', { agent: cell(3, 3), door: cell(3, 0) });
    d.lava[cell(3, 2)] = true;
    expect(generalAction(d)).toBe(2);
    const g = episode('gems', { agent: cell(3, 3), gems: [cell(1, 4), cell(6, 6)] });
    expect(generalAction(g)).toBe(0);
  });

  it('solves the door task often but not always: a door specialist has room to improve', () => {
    let door = 0;
    for (let seed = 0; seed < 200; seed++) {
      const e = createEpisode('door', seed);
      while (!e.done) step(e, generalAction(e));
      door += e.score;
    }
    expect(door / 200).toBeGreaterThan(0.3);
    expect(door / 200).toBeLessThan(0.85);
  });
});
