// parseProbes: the committed fixture file parses to the sets transformers' references were made
// for, and every malformed line is refused with the file, the line and the reason.
import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { defaultSetName, parseProbes } from './probes.ts';

const fixtures = join(dirname(fileURLToPath(import.meta.url)), '../test/eval-fixtures');

describe('parseProbes', () => {
  it('reads the fixture probes, lines without "set" in the file set', () => {
    const probes = parseProbes(readFileSync(join(fixtures, 'probes.jsonl'), 'utf8'), 'probes.jsonl');
    expect(probes.map((p) => p.set)).toEqual(['facts', 'facts', 'facts', 'probes', 'probes', 'probes']);
    expect(probes[0]).toEqual({ prompt: 'The capital of France is', completion: ' Paris.', set: 'facts' });
    expect(probes[3]?.completion).toBe(" Oui, c'est délicieux! ☕🙂");
    // Each reference.json lists the probes it scored: the same text, the same set.
    const reference = JSON.parse(readFileSync(join(fixtures, 'llama/reference.json'), 'utf8')) as {
      probes: { prompt: string; completion: string; set: string }[];
    };
    expect(probes).toEqual(
      reference.probes.map(({ prompt, completion, set }) => ({ prompt, completion, set })),
    );
  });

  it('skips blank lines, accepts CRLF and a byte-order mark, keeps file order', () => {
    const text =
      '\uFEFF{"prompt":"a","completion":"b"}\r\n\r\n   \n{"prompt":"","completion":" c","set":"x","extra":1}\n';
    expect(parseProbes(text, 'dir/sub/my.set.jsonl')).toEqual([
      { prompt: 'a', completion: 'b', set: 'my.set' },
      { prompt: '', completion: ' c', set: 'x' },
    ]);
  });

  it('names the default set after the file, without folders or extension', () => {
    expect(defaultSetName('probes.jsonl')).toBe('probes');
    expect(defaultSetName('/a/b/math.jsonl')).toBe('math');
    expect(defaultSetName('C:\\evals\\code.v2.jsonl')).toBe('code.v2');
    expect(defaultSetName('noext')).toBe('noext');
    expect(defaultSetName('.hidden')).toBe('.hidden');
  });

  const cases: [string, string, RegExp][] = [
    ['bad JSON', '{"prompt":"a","completion":"b"}\n{"prompt": "a",', /^p\.jsonl:2: not valid JSON \(/],
    ['an array', '[1, 2]', /^p\.jsonl:1: expected an object .*, got an array$/],
    ['a string', '"just text"', /^p\.jsonl:1: expected an object .*, got a string$/],
    ['null', 'null', /^p\.jsonl:1: expected an object .*, got null$/],
    ['missing prompt', '{"completion":"b"}', /^p\.jsonl:1: "prompt" is missing$/],
    ['missing completion', '\n\n{"prompt":"a"}', /^p\.jsonl:3: "completion" is missing$/],
    [
      'a number prompt',
      '{"prompt":1,"completion":"b"}',
      /^p\.jsonl:1: "prompt" must be a string, got a number$/,
    ],
    [
      'an object completion',
      '{"prompt":"a","completion":{}}',
      /"completion" must be a string, got an object$/,
    ],
    ['an empty completion', '{"prompt":"a","completion":""}', /^p\.jsonl:1: "completion" is empty/],
    [
      'a non-string set',
      '{"prompt":"a","completion":"b","set":3}',
      /^p\.jsonl:1: "set" must be a string, got a number$/,
    ],
    ['an empty set', '{"prompt":"a","completion":"b","set":" "}', /^p\.jsonl:1: "set" is empty/],
    ['no probes at all', '\n  \n', /^p\.jsonl: no probes/],
  ];
  it.each(cases)('refuses %s, naming the file and line', (_what, text, message) => {
    expect(() => parseProbes(text, 'p.jsonl')).toThrow(message);
  });
});
