// The regular-shape header scanner must agree with the strict parser plus schema check on every
// input: the same entries when it accepts, and when it declines the general path decides alone.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { DTYPES } from './dtype.ts';
import { headerEntries, scanRegularHeader } from './safetensors.ts';

type Outcome =
  { ok: true; metadata: Record<string, string>; entries: unknown[] } | { ok: false; error: string };

function outcome(text: string, fast: boolean): Outcome {
  try {
    const { metadata, entries } = headerEntries('h.safetensors', text, fast);
    // The scanner keeps text order, Object.keys puts integer-like names first: compare by name.
    const sorted = [...entries].sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
    return { ok: true, metadata, entries: sorted };
  } catch (error) {
    return { ok: false, error: String(error) };
  }
}

/** Number tokens as written, valid or not: plain, leading zeros, long, negative, fractional. */
const numberToken = fc.oneof(
  { weight: 6, arbitrary: fc.nat({ max: 5000 }).map(String) },
  fc.constantFrom(
    '0',
    '00',
    '01',
    '-1',
    '1.5',
    '1e3',
    '9007199254740991',
    '9007199254740992',
    '123456789012345',
  ),
  fc.bigInt({ min: 0n, max: (1n << 70n) - 1n }).map(String),
);
const nameToken = fc.oneof(
  { weight: 6, arbitrary: fc.stringMatching(/^[a-c0-2.]{1,4}$/).map((n) => JSON.stringify(n)) },
  fc.constantFrom(
    '""',
    '"__metadata__"',
    '"__proto__"',
    '"a\\"b"',
    '"\\u0041"',
    '"\u00e9"',
    '"a\u0001"',
    '"a\\n"',
  ),
  fc.string({ maxLength: 4 }).map((n) => JSON.stringify(n)),
);
const dtypeToken = fc.oneof(
  { weight: 6, arbitrary: fc.constantFrom(...DTYPES) },
  fc.constantFrom('f32', 'F', 'X\\"'),
);
const entry = fc
  .tuple(nameToken, dtypeToken, fc.array(numberToken, { maxLength: 3 }), numberToken, numberToken)
  .map(
    ([name, dtype, shape, begin, end]) =>
      `${name}:{"dtype":"${dtype}","shape":[${shape.join(',')}],"data_offsets":[${begin},${end}]}`,
  );
const header = fc
  .tuple(fc.array(entry, { minLength: 1, maxLength: 6 }), fc.constantFrom('', ' ', '   ', '\n', '\0', ' x'))
  .map(([entries, padding]) => `{${entries.join(',')}}${padding}`);
const edit = fc.record({
  at: fc.nat(),
  remove: fc.nat({ max: 3 }),
  insert: fc.constantFrom('', ' ', ',', '"', '{', '}', '[', ']', '0', '\\', ':'),
});

describe('the regular-shape header scanner', () => {
  it('gives the general path’s entries or error on generated headers', () => {
    fc.assert(
      fc.property(header, (text) => {
        expect(outcome(text, true)).toEqual(outcome(text, false));
      }),
      { numRuns: 2000 },
    );
  });

  it('gives the general path’s entries or error on headers with random edits', () => {
    fc.assert(
      fc.property(header, fc.array(edit, { minLength: 1, maxLength: 3 }), (text, edits) => {
        let mutated = text;
        for (const { at, remove, insert } of edits) {
          const i = at % (mutated.length + 1);
          mutated = mutated.slice(0, i) + insert + mutated.slice(i + remove);
        }
        expect(outcome(mutated, true)).toEqual(outcome(mutated, false));
      }),
      { numRuns: 2000 },
    );
  });

  it('takes the regular shape itself, so the properties above test it and not only the fallback', () => {
    const text =
      '{"b.0":{"dtype":"F32","shape":[2,3],"data_offsets":[0,24]},"a":{"dtype":"BOOL","shape":[],"data_offsets":[24,25]}}  ';
    expect(scanRegularHeader(text)).toEqual([
      { name: 'b.0', dtype: 'F32', shape: [2, 3], begin: 0n, end: 24n },
      { name: 'a', dtype: 'BOOL', shape: [], begin: 24n, end: 25n },
    ]);
    expect(outcome(text, true)).toEqual(outcome(text, false));
  });

  it('declines what it does not check itself', () => {
    const regular = (name: string, rest = '') =>
      `{${name}:{"dtype":"F32","shape":[1],"data_offsets":[0,4]}${rest}}`;
    for (const text of [
      regular('"a"', ',"a":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}'),
      regular('"__metadata__"'),
      regular('""'),
      regular('"a\\u0041"'),
      regular('"a\u0001"'),
      ' ' + regular('"a"'),
      regular('"a"').replace('[0,4]', '[00,4]'),
      regular('"a"').replace('[1]', '[1234567890123456]'),
      regular('"a"').replace('F32', 'f32'),
      regular('"a"') + '\0',
    ]) {
      expect(scanRegularHeader(text), text).toBeUndefined();
    }
  });
});
