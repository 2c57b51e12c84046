// The strict JSON parser: agreement with JSON.parse on valid input, and every strictness rule.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { isIntegerLiteral, JsonSyntaxError, parseJson } from './json.ts';

function syntaxError(text: string, options?: Parameters<typeof parseJson>[1]): JsonSyntaxError {
  try {
    parseJson(text, options);
  } catch (error) {
    expect(error).toBeInstanceOf(JsonSyntaxError);
    return error as JsonSyntaxError;
  }
  throw new Error(`expected ${JSON.stringify(text)} to be rejected`);
}

describe('parseJson', () => {
  it('agrees with JSON.parse on any valid JSON', () => {
    fc.assert(
      fc.property(fc.json({ maxDepth: 6 }), (text) => {
        expect(parseJson(text)).toStrictEqual(JSON.parse(text));
      }),
      { numRuns: 1000 },
    );
  });

  it('decodes escapes and surrogate pairs', () => {
    expect(parseJson('"a\\"\\\\\\/\\b\\f\\n\\r\\t\\u00e9\\ud83d\\ude00"')).toBe('a"\\/\b\f\n\r\té😀');
    expect(parseJson('"raw 😀 pair"')).toBe('raw 😀 pair');
  });

  it('rejects duplicate keys at any depth, pointing at the second one', () => {
    const error = syntaxError('{"a": {"b": 1,\n  "b": 2}}');
    expect(error.message).toBe('duplicate key "b" at line 2, column 3');
    expect([error.line, error.column, error.position]).toEqual([2, 3, 17]);
    expect(syntaxError('[{"x":1},{"y":[{"z":1,"z":1}]}]').message).toMatch(/duplicate key "z"/);
    // Keys equal after unescaping are duplicates too.
    expect(syntaxError('{"é":1,"\\u00e9":2}').message).toMatch(/duplicate key "é"/);
  });

  it('keeps __proto__ as an ordinary key', () => {
    const value = parseJson('{"__proto__": {"polluted": true}}') as Record<string, unknown>;
    expect(Object.keys(value)).toEqual(['__proto__']);
    expect(Object.getPrototypeOf(value)).toBe(Object.prototype);
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
  });

  it.each([
    ['01', /unexpected '1' after/],
    ['1.', /no digits after the decimal point/],
    ['.5', /unexpected '\.'/],
    ['+1', /unexpected '\+'/],
    ['-', /invalid number/],
    ['1e', /no digits in the exponent/],
    ['NaN', /unexpected 'N'/],
    ['Infinity', /unexpected 'I'/],
    ['tru', /unexpected 't'/],
    ['[1,]', /unexpected '\]'/],
    ['{"a":1,}', /expected a string key/],
    ["{'a':1}", /expected a string key/],
    ['{"a" 1}', /expected ':'/],
    ['[1 2]', /expected ',' or '\]'/],
    ['"tab\there"', /control character U\+0009/],
    ['"\\x41"', /invalid escape/],
    ['"\\u12"', /invalid \\u escape/],
    ['"\\ud800"', /lone surrogate escape/],
    ['"\\udc00\\ud800"', /lone surrogate escape/],
    ['"\ud800x"', /lone surrogate/],
    ['"open', /unterminated string/],
    ['', /unexpected end of input/],
    ['\u00a0{}', /U\+00A0/],
    ['{} {}', /after the JSON value/],
  ])('rejects %j', (text, message) => {
    expect(syntaxError(text).message).toMatch(message);
  });

  it('caps nesting depth', () => {
    expect(parseJson('[[[]]]', { maxDepth: 3 })).toEqual([[[]]]);
    expect(syntaxError('[[[[]]]]', { maxDepth: 3 }).message).toMatch(/nesting deeper than 3 levels/);
    expect(syntaxError(`${'['.repeat(100_000)}${']'.repeat(100_000)}`).message).toMatch(/deeper than 64/);
  });

  it('hands each number literal, as written, to the number option', () => {
    const seen: string[] = [];
    const value = parseJson('[0, -0, 1.50, 2E+3, 18446744073709551617]', {
      number: (literal) => {
        seen.push(literal);
        return isIntegerLiteral(literal) ? BigInt(literal) : literal;
      },
    });
    expect(seen).toEqual(['0', '-0', '1.50', '2E+3', '18446744073709551617']);
    expect(value).toEqual([0n, 0n, '1.50', '2E+3', 18446744073709551617n]);
  });

  it('tells integer literals from others', () => {
    expect(['0', '-7', '123456789012345678901234567890'].every(isIntegerLiteral)).toBe(true);
    expect(['1.0', '1e3', '01', '-', '1E0'].some(isIntegerLiteral)).toBe(false);
  });
});
