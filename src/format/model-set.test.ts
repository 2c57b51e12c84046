import { describe, expect, it } from 'vitest';
import { cardBaseModels, jsonObject, parentsOf, readSet, type SetMember } from './model-set.ts';

function member(label: string, changes: Partial<SetMember> = {}): SetMember {
  return { label, config: null, adapterConfig: null, cardBaseModels: [], hasWeights: true, ...changes };
}

const derived = (label: string, from: string): SetMember =>
  member(label, { config: { model_type: 'llama', _name_or_path: from } });

describe('readSet', () => {
  it('takes the folder named base, whatever order the folders come in', () => {
    const reading = readSet([member('agent-0'), member('agent-1'), member('base'), member('agent-2')]);
    expect(reading).toEqual({
      kind: 'set',
      base: 'base',
      agents: ['agent-0', 'agent-1', 'agent-2'],
      why: 'the folder is named base',
    });
  });

  it('knows base_model and Base-Model as base names', () => {
    expect(readSet([member('a'), member('base_model')])).toMatchObject({ kind: 'set', base: 'base_model' });
    expect(readSet([member('Base-Model'), member('a')])).toMatchObject({ kind: 'set', base: 'Base-Model' });
    // A name that only starts with base is no base name.
    expect(readSet([member('baseline-agent'), member('a')]).kind).toBe('ask');
  });

  it('asks where two folders are named like a base', () => {
    expect(readSet([member('base'), member('base-model'), member('a')])).toMatchObject({
      kind: 'ask',
      candidates: ['base', 'base-model'],
    });
  });

  it('takes the folder the others name in config.json _name_or_path (a path or a hub id)', () => {
    const reading = readSet([
      derived('rl-0', '/checkpoints/qwen-0.5b'),
      member('qwen-0.5b', { config: { _name_or_path: 'Qwen/Qwen2.5-0.5B' } }),
      derived('rl-1', 'qwen-0.5b/'),
    ]);
    expect(reading).toMatchObject({ kind: 'set', base: 'qwen-0.5b', agents: ['rl-0', 'rl-1'] });
    expect(reading.why).toContain('rl-0, rl-1 say they were made from qwen-0.5b');
  });

  it('ignores a folder naming itself (a model saved from its own path)', () => {
    const reading = readSet([derived('start', '/x/start'), derived('a', '/x/a'), derived('b', '/x/start')]);
    expect(reading).toMatchObject({ kind: 'set', base: 'start', agents: ['a', 'b'] });
    expect(parentsOf(derived('a', '/x/a'), [member('a')])).toEqual([]);
  });

  it('follows adapter_config.json and model cards too', () => {
    const adapter = member('lora', { adapterConfig: { base_model_name_or_path: 'org/root' } });
    const carded = member('sft', { cardBaseModels: ['./root'] });
    expect(readSet([adapter, carded, member('root')])).toMatchObject({ kind: 'set', base: 'root' });
  });

  it('takes the root of a chain: a fine-tune of a fine-tune is still an agent', () => {
    const reading = readSet([derived('sft', 'root'), derived('rl', 'sft'), member('root')]);
    expect(reading).toMatchObject({ kind: 'set', base: 'root', agents: ['sft', 'rl'] });
  });

  it('asks where the folders name different origins', () => {
    const reading = readSet([derived('a', 'x'), derived('b', 'y'), member('x'), member('y')]);
    expect(reading).toMatchObject({ kind: 'ask', candidates: ['x', 'y'] });
  });

  it('asks where the name and the lineage disagree', () => {
    const reading = readSet([member('base'), derived('a', 'other'), derived('b', 'other'), member('other')]);
    expect(reading).toMatchObject({ kind: 'ask', candidates: ['base', 'other'] });
    expect(reading.why).toContain('a, b say they were made from other');
  });

  it('takes the one full model among PEFT adapters', () => {
    const adapter = (label: string): SetMember =>
      member(label, { adapterConfig: { base_model_name_or_path: 'somewhere/else' } });
    expect(readSet([adapter('l0'), member('full'), adapter('l1')])).toMatchObject({
      kind: 'set',
      base: 'full',
      agents: ['l0', 'l1'],
    });
  });

  it('asks, among the folders with weights, where nothing says which is the base', () => {
    const configs = { model_type: 'llama', hidden_size: 32 };
    const reading = readSet([
      member('agent-0', { config: configs }),
      member('agent-1', { config: configs }),
      member('notes', { hasWeights: false }),
    ]);
    expect(reading).toEqual({
      kind: 'ask',
      candidates: ['agent-0', 'agent-1'],
      why: 'no folder is named base and no config or model card says which one the others came from',
    });
  });

  it('never guesses: any set without a named base or one lineage root is a question', () => {
    // Every two- to four-folder set of plain, unnamed, unrelated folders.
    for (let n = 2; n <= 4; n++) {
      const members = Array.from({ length: n }, (_, i) => member(`m${i}`));
      expect(readSet(members)).toMatchObject({ kind: 'ask', candidates: members.map((m) => m.label) });
    }
  });
});

describe('cardBaseModels', () => {
  it('reads a value, a flow list and a block list of the front matter', () => {
    expect(cardBaseModels('---\nlicense: mit\nbase_model: "org/base"\n---\n# x')).toEqual(['org/base']);
    expect(cardBaseModels('---\nbase_model: [a, "b"]\n---\n')).toEqual(['a', 'b']);
    expect(cardBaseModels('---\nbase_model:\n- org/a\n  - ./b\ntags: []\n---\n')).toEqual(['org/a', './b']);
  });

  it('finds nothing outside the front matter', () => {
    expect(cardBaseModels('# Model\nbase_model: x\n')).toEqual([]);
    expect(cardBaseModels('---\nlicense: mit\n---\nbase_model: x')).toEqual([]);
  });
});

describe('jsonObject', () => {
  it('is null for anything but a JSON object', () => {
    expect(jsonObject('{"a":1}')).toEqual({ a: 1 });
    for (const text of [null, '', '[1]', '3', 'null', '{bad'] as const) expect(jsonObject(text)).toBeNull();
  });
});
