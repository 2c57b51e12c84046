import { describe, expect, it } from 'vitest';
import { at, must } from '../io/checked.ts';
import { bf16ToF32, f32ToBf16 } from '../format/dtype.ts';
import { OBS_SIZE, planeFeature, PLANES, WINDOW } from './env.ts';
import { roundParamsToBf16 } from './policy.ts';
import { DEMO_TRAIN_CONFIG, serializeModel, trainDemoSet, type TrainConfig } from './train.ts';

// A reduced run: the same code paths as the committed set, in well under a second.
const reduced: TrainConfig = {
  ...DEMO_TRAIN_CONFIG,
  seed: 11,
  hiddenSizes: [16, 8],
  base: { ...DEMO_TRAIN_CONFIG.base, updates: 40, batchEpisodes: 4 },
  agent: { ...DEMO_TRAIN_CONFIG.agent, updates: 25, batchEpisodes: 4 },
};

function files(config: TrainConfig): Uint8Array[] {
  const set = trainDemoSet(config);
  const models = [
    serializeModel(set.policyConfig, set.base.params, { role: 'base' }, config.seed),
    ...set.agents.map((a) =>
      serializeModel(set.policyConfig, a.params, { role: 'agent', task: a.task }, config.seed),
    ),
  ];
  return models.flatMap((m) => [m.safetensors, new TextEncoder().encode(m.configJson)]);
}

describe('trainDemoSet', () => {
  it('reproduces every file bit for bit from the seed, and another seed gives other weights', () => {
    const first = files(reduced);
    expect(files(reduced)).toEqual(first);
    const other = files({ ...reduced, seed: 12 });
    expect(other[0]).not.toEqual(first[0]);
    expect(first.length).toBe(8);
  });

  it('reproduces the Adam variant too', () => {
    const adam: TrainConfig = { ...reduced, agent: { ...reduced.agent, optimizer: 'adam', lr: 1e-3 } };
    expect(files(adam)).toEqual(files(adam));
    expect(files(adam)[2]).not.toEqual(files(reduced)[2]);
  });

  const set = trainDemoSet(reduced);

  it('fine-tunes every agent from the stored base, and only the agent moves', () => {
    for (const agent of set.agents) {
      expect(agent.log.length).toBe(reduced.agent.updates);
      expect(agent.storedChanged).toBeGreaterThan(0);
      let differs = 0;
      for (const [name, values] of agent.params) {
        const base = must(set.base.params.get(name), name);
        values.forEach((v, i) => (differs += v === base[i] ? 0 : 1));
      }
      expect(differs).toBe(agent.storedChanged);
    }
    // The stored base is already bf16: rounding it again changes nothing.
    expect(roundParamsToBf16(set.base.params)).toEqual(set.base.params);
  });

  it('stores bf16 of the f32 master, so master updates under half a bf16 step leave the base value', () => {
    for (const agent of set.agents) {
      expect(roundParamsToBf16(agent.master)).toEqual(agent.params);
      let vanished = 0;
      for (const [name, master] of agent.master) {
        const base = must(set.base.params.get(name), name);
        const stored = must(agent.params.get(name), name);
        master.forEach((m, i) => {
          if (m === base[i] || stored[i] !== base[i]) return;
          vanished += 1;
          // The master moved, but stayed within half a bf16 step of the base value.
          expect(bf16ToF32(f32ToBf16(m))).toBe(base[i]);
        });
      }
      expect(agent.masterChanged - agent.storedChanged).toBe(vanished);
    }
    expect(set.agents.some((a) => a.masterChanged > a.storedChanged)).toBe(true);
  });

  it('leaves the weights of inputs a task never shows exactly unchanged (lava for the key agent)', () => {
    const key = must(
      set.agents.find((a) => a.task === 'key'),
      'key agent',
    );
    const door = must(
      set.agents.find((a) => a.task === 'door'),
      'door agent',
    );
    const w = must(key.params.get('layers.0.weight'), 'layers.0.weight');
    const base = must(set.base.params.get('layers.0.weight'), 'layers.0.weight');
    const width = at(reduced.hiddenSizes, 0);
    const inputs = OBS_SIZE;
    const lavaStart = PLANES.indexOf('lava') * WINDOW * WINDOW;
    const lavaColumns = Array.from({ length: WINDOW * WINDOW }, (_, k) => lavaStart + k);
    for (let j = 0; j < width; j++)
      for (const c of lavaColumns) expect(w[j * inputs + c]).toBe(base[j * inputs + c]);
    // The key plane is the key agent's own: the door agent never sees a key.
    const keyColumn = planeFeature(0, 1, 0);
    const dw = must(door.params.get('layers.0.weight'), 'layers.0.weight');
    for (let j = 0; j < width; j++) expect(dw[j * inputs + keyColumn]).toBe(base[j * inputs + keyColumn]);
  });
});
