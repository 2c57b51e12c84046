// The reader against hand-built byte fixtures: one case per rejection rule (through both the sync
// parser and the lazy reader), valid edge cases, writer→reader round trips, and fuzz properties.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { memorySource, type ByteSource } from '../io/source.ts';
import { DTYPES, dtypeAlignment, dtypeBits, type Dtype } from './dtype.ts';
import { SafetensorsError, type SafetensorsErrorCode } from '../io/errors.ts';
import {
  parseSafetensorsHeader,
  readSafetensorsHeader,
  tensorByteLength,
  type SafetensorsHeader,
} from './safetensors.ts';
import { serializeSafetensors, type TensorSpec } from './write.ts';

const FILE = 'agent.safetensors';
const encoder = new TextEncoder();

/** 8-byte N (the JSON length unless given), the header bytes, then `data` zero bytes. */
function rawFile(header: string | Uint8Array, data = 0, n?: bigint): Uint8Array {
  const json = typeof header === 'string' ? encoder.encode(header) : header;
  const out = new Uint8Array(8 + json.length + data);
  new DataView(out.buffer).setBigUint64(0, n ?? BigInt(json.length), true);
  out.set(json, 8);
  return out;
}

const entry = (dtype: string, shape: string, offsets: string): string =>
  `{"dtype":"${dtype}","shape":${shape},"data_offsets":${offsets}}`;

interface Case {
  name: string;
  bytes: Uint8Array;
  code: SafetensorsErrorCode;
  tensor?: string;
  message?: RegExp;
}

const u64Max = '18446744073709551615';
const cases: Case[] = [
  { name: 'an empty file', bytes: new Uint8Array(0), code: 'HeaderTooSmall' },
  { name: 'a 7-byte file', bytes: new Uint8Array(7), code: 'HeaderTooSmall', message: /7 bytes/ },
  {
    name: 'a Git LFS pointer',
    bytes: encoder.encode(
      'version https://git-lfs.github.com/spec/v1\noid sha256:4d7a214614ab2935c943f9e0ff69d22eadbb8f32b1258daaa5e2ca24d17e2393\nsize 4943162240\n',
    ),
    code: 'GitLfsPointer',
    message: /Git LFS pointer, not the weights: run `git lfs pull` or download the file itself/,
  },
  { name: 'N = 0', bytes: rawFile('', 8, 0n), code: 'HeaderTooLarge', message: /header length is 0/ },
  { name: 'N over 100 MB', bytes: rawFile('{}', 0, 100_000_001n), code: 'HeaderTooLarge' },
  { name: 'N = 2^64-1', bytes: rawFile('{}', 0, BigInt(u64Max)), code: 'HeaderTooLarge' },
  {
    name: 'text starting "version " that is not an LFS pointer',
    bytes: encoder.encode('version 2 of something else entirely'),
    code: 'HeaderTooLarge',
    message: /probably a Git LFS pointer/,
  },
  {
    name: 'N past the end of the file',
    bytes: rawFile('{}', 0, 100n),
    code: 'InvalidHeaderLength',
    message: /reaches byte 108, past the end of the 10-byte file/,
  },
  {
    name: 'a header that is not UTF-8',
    bytes: rawFile(new Uint8Array([0x7b, 0xff, 0x7d])),
    code: 'InvalidHeader',
  },
  {
    name: 'an overlong UTF-8 encoding',
    bytes: rawFile(new Uint8Array([0x7b, 0x22, 0xc0, 0x80, 0x22, 0x3a, 0x31, 0x7d])),
    code: 'InvalidHeader',
  },
  {
    name: 'a UTF-8-encoded lone surrogate',
    bytes: rawFile(new Uint8Array([0x7b, 0x22, 0xed, 0xa0, 0x80, 0x22, 0x3a, 0x31, 0x7d])),
    code: 'InvalidHeader',
  },
  {
    name: 'a header that is not JSON',
    bytes: rawFile('{"a": '),
    code: 'InvalidHeaderDeserialization',
    message: /line 1, column 7/,
  },
  {
    name: 'a JSON array header',
    bytes: rawFile('[]'),
    code: 'InvalidHeaderDeserialization',
    message: /not a JSON object/,
  },
  { name: 'a BOM before the header', bytes: rawFile('\ufeff{}'), code: 'InvalidHeaderDeserialization' },
  {
    name: 'NUL padding after the header',
    bytes: rawFile(encoder.encode('{}\0\0\0\0\0\0')),
    code: 'InvalidHeaderDeserialization',
    message: /6 NUL byte\(s\).*padding must be spaces/,
  },
  {
    name: 'an unknown dtype',
    bytes: rawFile(`{"w":${entry('F128', '[1]', '[0,16]')}}`, 16),
    code: 'InvalidHeaderDeserialization',
    tensor: 'w',
    message: /dtype "F128"/,
  },
  {
    name: 'a negative dimension',
    bytes: rawFile(`{"w":${entry('U8', '[-1]', '[0,0]')}}`),
    code: 'InvalidHeaderDeserialization',
    tensor: 'w',
    message: /shape entry -1 /,
  },
  {
    name: 'a fractional-looking dimension 1.0',
    bytes: rawFile(`{"w":${entry('U8', '[1.0]', '[0,1]')}}`, 1),
    code: 'InvalidHeaderDeserialization',
    tensor: 'w',
    message: /shape entry 1\.0 /,
  },
  {
    name: 'an exponent dimension 1e3',
    bytes: rawFile(`{"w":${entry('U8', '[1e3]', '[0,1000]')}}`, 1000),
    code: 'InvalidHeaderDeserialization',
    tensor: 'w',
  },
  {
    name: 'a dimension of 2^64',
    bytes: rawFile(`{"w":${entry('U8', '[18446744073709551616]', '[0,0]')}}`),
    code: 'InvalidHeaderDeserialization',
    tensor: 'w',
  },
  {
    name: 'a dimension of 2^53',
    bytes: rawFile(`{"w":${entry('U8', '[9007199254740992, 0]', '[0,0]')}}`),
    code: 'InvalidHeaderDeserialization',
    tensor: 'w',
    message: /2\^53-1/,
  },
  {
    name: 'data_offsets with three numbers',
    bytes: rawFile(`{"w":${entry('U8', '[1]', '[0,1,1]')}}`, 1),
    code: 'InvalidHeaderDeserialization',
    tensor: 'w',
  },
  {
    name: 'a negative offset',
    bytes: rawFile(`{"w":${entry('U8', '[1]', '[-0,1]')}}`, 1),
    code: 'InvalidHeaderDeserialization',
    tensor: 'w',
  },
  {
    name: 'an offset of 2^64',
    bytes: rawFile(`{"w":${entry('U8', '[1]', '[0,18446744073709551616]')}}`, 1),
    code: 'InvalidHeaderDeserialization',
    tensor: 'w',
  },
  {
    name: 'a string shape',
    bytes: rawFile(`{"w":{"dtype":"U8","shape":"[1]","data_offsets":[0,1]}}`, 1),
    code: 'InvalidHeaderDeserialization',
    tensor: 'w',
  },
  {
    name: 'a missing data_offsets field',
    bytes: rawFile(`{"w":{"dtype":"U8","shape":[1]}}`, 1),
    code: 'InvalidHeaderDeserialization',
    tensor: 'w',
  },
  {
    name: 'an unknown field in a tensor entry',
    bytes: rawFile(`{"w":{"dtype":"U8","shape":[1],"data_offsets":[0,1],"offsets":[0,1]}}`, 1),
    code: 'InvalidHeaderDeserialization',
    tensor: 'w',
    message: /unknown field "offsets"/,
  },
  {
    name: 'a tensor entry that is not an object',
    bytes: rawFile(`{"w":[0,1]}`, 1),
    code: 'InvalidHeaderDeserialization',
    tensor: 'w',
  },
  {
    name: 'a numeric __metadata__ value',
    bytes: rawFile(`{"__metadata__":{"step":1000}}`),
    code: 'InvalidHeaderDeserialization',
    message: /__metadata__ value for "step"/,
  },
  {
    name: '__metadata__ that is not an object',
    bytes: rawFile(`{"__metadata__":"pt"}`),
    code: 'InvalidHeaderDeserialization',
  },
  {
    name: 'a duplicate tensor key',
    bytes: rawFile(`{"w":${entry('U8', '[1]', '[0,1]')},"w":${entry('U8', '[1]', '[0,1]')}}`, 1),
    code: 'InvalidHeaderDeserialization',
    message: /duplicate key "w"/,
  },
  {
    name: 'a duplicate key inside a tensor entry',
    bytes: rawFile(`{"w":{"dtype":"U8","shape":[1],"dtype":"I8","data_offsets":[0,1]}}`, 1),
    code: 'InvalidHeaderDeserialization',
    message: /duplicate key "dtype"/,
  },
  {
    name: 'a duplicate key inside __metadata__',
    bytes: rawFile(`{"__metadata__":{"format":"pt","format":"np"}}`),
    code: 'InvalidHeaderDeserialization',
    message: /duplicate key "format"/,
  },
  {
    name: 'two __metadata__ keys',
    bytes: rawFile(`{"__metadata__":{},"__metadata__":{}}`),
    code: 'InvalidHeaderDeserialization',
    message: /duplicate key "__metadata__"/,
  },
  {
    name: 'a JSON-escaped lone surrogate',
    bytes: rawFile(`{"\\ud800":${entry('U8', '[0]', '[0,0]')}}`),
    code: 'InvalidHeaderDeserialization',
    message: /lone surrogate/,
  },
  {
    name: 'deep nesting',
    bytes: rawFile(`{"__metadata__":${'['.repeat(20)}${']'.repeat(20)}}`),
    code: 'InvalidHeaderDeserialization',
    message: /nesting deeper/,
  },
  {
    name: 'a NUL in a tensor name',
    bytes: rawFile(`{"w\\u0000x":${entry('U8', '[1]', '[0,1]')}}`, 1),
    code: 'InvalidName',
    tensor: 'w\u0000x',
    message: /"w\\u0000x"/,
  },
  {
    name: 'a control character in a tensor name',
    bytes: rawFile(`{"w\\nx":${entry('U8', '[1]', '[0,1]')}}`, 1),
    code: 'InvalidName',
    tensor: 'w\nx',
  },
  {
    name: 'an empty tensor name',
    bytes: rawFile(`{"":${entry('U8', '[1]', '[0,1]')}}`, 1),
    code: 'InvalidName',
    tensor: '',
  },
  {
    name: 'data that does not start at 0',
    bytes: rawFile(`{"w":${entry('U8', '[1]', '[1,2]')}}`, 2),
    code: 'InvalidOffset',
    tensor: 'w',
    message: /starts at byte 1 of the data buffer, not 0/,
  },
  {
    name: 'a gap between tensors',
    bytes: rawFile(`{"a":${entry('U8', '[2]', '[0,2]')},"b":${entry('U8', '[2]', '[4,6]')}}`, 6),
    code: 'InvalidOffset',
    tensor: 'b',
    message: /previous tensor \(a\) ends at 2: a gap of 2 bytes/,
  },
  {
    name: 'overlapping tensors',
    bytes: rawFile(`{"a":${entry('U8', '[4]', '[0,4]')},"b":${entry('U8', '[4]', '[2,6]')}}`, 6),
    code: 'InvalidOffset',
    tensor: 'b',
    message: /overlaps the previous tensor \(a/,
  },
  {
    name: 'offsets that end before they begin',
    bytes: rawFile(
      `{"a":${entry('U8', '[0]', '[0,0]')},"b":${entry('U8', '[0]', '[0,0]')},"c":${entry('U8', '[1]', '[1,0]')}}`,
      1,
    ),
    code: 'InvalidOffset',
    tensor: 'c',
  },
  {
    name: 'ten tensors claiming the same bytes (the reference json attack)',
    bytes: rawFile(
      `{${Array.from({ length: 10 }, (_, i) => `"t${i}":${entry('F32', '[2,2]', '[0,16]')}`).join(',')}}`,
      16,
    ),
    code: 'InvalidOffset',
    tensor: 't1',
  },
  {
    name: 'an element count past 2^64',
    bytes: rawFile(`{"w":${entry('F32', '[9007199254740991, 9007199254740991]', '[0,0]')}}`),
    code: 'ValidationOverflow',
    tensor: 'w',
  },
  {
    name: 'a bit count past 2^64',
    bytes: rawFile(`{"w":${entry('F64', '[4294967296, 67108864]', '[0,0]')}}`),
    code: 'ValidationOverflow',
    tensor: 'w',
  },
  {
    name: 'F4 with an odd element count',
    bytes: rawFile(`{"w":${entry('F4', '[3]', '[0,2]')}}`, 2),
    code: 'MisalignedSlice',
    tensor: 'w',
    message: /12 bits/,
  },
  {
    name: 'a byte length that does not match shape × dtype',
    bytes: rawFile(`{"w":${entry('F32', '[2,2]', '[0,12]')}}`, 12),
    code: 'TensorInvalidInfo',
    tensor: 'w',
    message: /needs 16 bytes but data_offsets \[0, 12\] hold 12/,
  },
  {
    name: 'a truncated download',
    bytes: rawFile(`{"w":${entry('F32', '[2,2]', '[0,16]')}}`, 14),
    code: 'MetadataIncompleteBuffer',
    message: /truncated by 2 bytes/,
  },
  {
    name: 'trailing bytes after the last tensor',
    bytes: rawFile(`{"w":${entry('F32', '[2,2]', '[0,16]')}}`, 19),
    code: 'MetadataIncompleteBuffer',
    message: /3 trailing bytes/,
  },
  {
    name: 'an offset beyond 2^53 (exact 64-bit arithmetic)',
    bytes: rawFile(`{"w":${entry('U8', '[4503599627370496, 256]', '[0,1152921504606846976]')}}`, 4),
    code: 'MetadataIncompleteBuffer',
    message: /truncated by 1152921504606846972 bytes/,
  },
];

async function rejection(read: () => unknown): Promise<SafetensorsError> {
  try {
    await read();
  } catch (error) {
    expect(error).toBeInstanceOf(SafetensorsError);
    return error as SafetensorsError;
  }
  throw new Error('expected a SafetensorsError, but the file was accepted');
}

function checkError(error: SafetensorsError, c: Case): void {
  expect(error.code).toBe(c.code);
  expect(error.name).toBe('SafetensorsError');
  expect(error.file).toBe(FILE);
  expect(error.message.startsWith(`${FILE}: `)).toBe(true);
  expect(error.tensor).toBe(c.tensor);
  if (c.tensor !== undefined && /^[\w.]+$/.test(c.tensor))
    expect(error.message).toContain(`${FILE}: ${c.tensor}: `);
  if (c.message) expect(error.message).toMatch(c.message);
}

describe('every rejection rule, with its code, file and tensor', () => {
  it.each(cases)('parseSafetensorsHeader rejects $name as $code', async (c) => {
    checkError(await rejection(() => parseSafetensorsHeader(FILE, c.bytes.length, c.bytes)), c);
  });
  it.each(cases)('readSafetensorsHeader rejects $name as $code', async (c) => {
    checkError(await rejection(() => readSafetensorsHeader(memorySource(FILE, c.bytes))), c);
  });
});

describe('the rules apply in the reference order', () => {
  it('checks the length before the UTF-8, and the UTF-8 before the JSON', async () => {
    const bad = rawFile(new Uint8Array([0xff, 0x7b]), 0, 50n);
    expect((await rejection(() => parseSafetensorsHeader(FILE, bad.length, bad))).code).toBe(
      'InvalidHeaderLength',
    );
    const notUtf8 = rawFile(new Uint8Array([0x5b, 0xff]));
    expect((await rejection(() => parseSafetensorsHeader(FILE, notUtf8.length, notUtf8))).code).toBe(
      'InvalidHeader',
    );
  });
  it('reports an offset problem before a size problem on the same tensor, as the reference walks them', async () => {
    const bytes = rawFile(`{"w":${entry('F32', '[2]', '[4,6]')}}`, 6);
    expect((await rejection(() => parseSafetensorsHeader(FILE, bytes.length, bytes))).code).toBe(
      'InvalidOffset',
    );
  });
  it('reports a size problem of an earlier tensor before a gap after it', async () => {
    const bytes = rawFile(`{"a":${entry('F32', '[2]', '[0,4]')},"b":${entry('U8', '[1]', '[5,6]')}}`, 6);
    const error = await rejection(() => parseSafetensorsHeader(FILE, bytes.length, bytes));
    expect([error.code, error.tensor]).toEqual(['TensorInvalidInfo', 'a']);
  });
});

describe('valid files', () => {
  const parse = (bytes: Uint8Array): SafetensorsHeader => parseSafetensorsHeader(FILE, bytes.length, bytes);

  it('accepts empty and 0-rank tensors and returns tensors in offset order', () => {
    const header = `{"z":${entry('F32', '[]', '[8,12]')},"e":${entry('BF16', '[2,0]', '[0,0]')},"a":${entry('U8', '[8]', '[0,8]')}}`;
    const parsed = parse(rawFile(header, 12));
    expect(parsed.tensors).toEqual([
      { name: 'e', dtype: 'BF16', shape: [2, 0], begin: 0, end: 0 },
      { name: 'a', dtype: 'U8', shape: [8], begin: 0, end: 8 },
      { name: 'z', dtype: 'F32', shape: [], begin: 8, end: 12 },
    ]);
    expect(parsed.headerLength).toBe(encoder.encode(header).length);
    expect(parsed.dataStart).toBe(8 + parsed.headerLength);
    expect(parsed.fileSize).toBe(parsed.dataStart + 12);
    expect(parsed.metadata).toEqual({});
  });

  it('accepts leading and trailing whitespace, an empty header and a null __metadata__', () => {
    expect(parse(rawFile(' \n\t{ }  \r\n')).tensors).toEqual([]);
    expect(parse(rawFile('{"__metadata__":null}')).metadata).toEqual({});
  });

  it('keeps metadata, and odd names such as __proto__ as plain names', () => {
    const parsed = parse(
      rawFile(
        `{"__metadata__":{"format":"pt","__proto__":"x"},"__proto__":${entry('U8', '[1]', '[0,1]')}}`,
        1,
      ),
    );
    expect(Object.entries(parsed.metadata)).toEqual([
      ['format', 'pt'],
      ['__proto__', 'x'],
    ]);
    expect(parsed.tensors[0]!.name).toBe('__proto__');
  });

  it('accepts sub-byte dtypes that total whole bytes', () => {
    const parsed = parse(
      rawFile(`{"a":${entry('F4', '[2,3]', '[0,3]')},"b":${entry('F6_E2M3', '[4]', '[3,6]')}}`, 6),
    );
    expect(parsed.tensors.map((t) => t.end - t.begin)).toEqual([3, 3]);
  });

  it('reads only the first bytes and the header, never the data', async () => {
    const bytes = serializeSafetensors([
      { name: 'w', dtype: 'F32', shape: [1024], data: new Uint8Array(4096) },
    ]);
    const reads: [number, number][] = [];
    const inner = memorySource(FILE, bytes);
    const spy: ByteSource = {
      name: inner.name,
      size: inner.size,
      read: (offset, length, into) => {
        reads.push([offset, length]);
        return inner.read(offset, length, into);
      },
    };
    const header = await readSafetensorsHeader(spy);
    const end = Math.max(...reads.map(([offset, length]) => offset + length));
    expect(end).toBe(header.dataStart);
    expect(reads.length).toBeLessThanOrEqual(2);
  });

  it('wraps a failing source read as ReadFailed naming the file', async () => {
    const failing: ByteSource = {
      name: FILE,
      size: 100,
      read: () => Promise.reject(Object.assign(new Error('gone'), { name: 'NotReadableError' })),
    };
    const error = await rejection(() => readSafetensorsHeader(failing));
    expect(error.code).toBe('ReadFailed');
    expect(error.message).toMatch(/^agent\.safetensors: .*changed or moved/);
  });
});

describe('tensorByteLength', () => {
  it('counts bytes for every dtype, including sub-byte ones', () => {
    expect(tensorByteLength('BF16', [3, 5])).toBe(30);
    expect(tensorByteLength('F4', [6])).toBe(3);
    expect(tensorByteLength('F6_E3M2', [4])).toBe(3);
    expect(tensorByteLength('C64', [])).toBe(8);
    expect(tensorByteLength('U8', [7, 0])).toBe(0);
  });
  it('throws our error for impossible shapes', () => {
    expect(() => tensorByteLength('F4', [3])).toThrow(expect.objectContaining({ code: 'MisalignedSlice' }));
    expect(() => tensorByteLength('F32', [-1])).toThrow(
      expect.objectContaining({ code: 'TensorInvalidInfo' }),
    );
    expect(() => tensorByteLength('F32', [1.5])).toThrow(
      expect.objectContaining({ code: 'TensorInvalidInfo' }),
    );
    expect(() => tensorByteLength('F64', [2 ** 30, 2 ** 30])).toThrow(
      expect.objectContaining({ code: 'ValidationOverflow' }),
    );
  });
});

/** A shape of this dtype whose bit count is a whole number of bytes, with an odd element count where possible. */
function shapeFor(dtype: Dtype, kind: 'odd' | 'empty' | 'scalar'): number[] {
  if (kind === 'empty') return [3, 0];
  if (kind === 'scalar') return dtypeBits(dtype) % 8 === 0 ? [] : [8];
  const bits = dtypeBits(dtype);
  return bits === 4 ? [2, 7] : bits === 6 ? [4, 3] : [3, 5];
}

function pseudoRandomBytes(length: number, seed: number): Uint8Array {
  const out = new Uint8Array(length);
  let state = seed >>> 0 || 1;
  for (let i = 0; i < length; i++) {
    state ^= state << 13;
    state ^= state >>> 17;
    state ^= state << 5;
    out[i] = state & 0xff;
  }
  return out;
}

describe('writer → reader round trips', () => {
  it('over every dtype, odd counts, empty and 0-rank tensors, aligned and bit-exact', async () => {
    const tensors: (TensorSpec & { data: Uint8Array })[] = [];
    DTYPES.forEach((dtype, i) => {
      for (const kind of ['odd', 'empty', 'scalar'] as const) {
        const shape = shapeFor(dtype, kind);
        const name = `layer.${i}.${dtype.toLowerCase()}.${kind}`;
        tensors.push({
          name,
          dtype,
          shape,
          data: pseudoRandomBytes(tensorByteLength(dtype, shape), i * 3 + 1),
        });
      }
    });
    const metadata = { format: 'pt', note: 'round trip ✓' };
    const bytes = serializeSafetensors(tensors, metadata);
    const header = await readSafetensorsHeader(memorySource(FILE, bytes));
    expect(header.headerLength % 8).toBe(0);
    expect(header.metadata).toEqual(metadata);
    expect(header.tensors).toHaveLength(tensors.length);
    const byName = new Map(header.tensors.map((t) => [t.name, t]));
    for (const t of tensors) {
      const read = byName.get(t.name)!;
      expect([read.dtype, read.shape]).toEqual([t.dtype, t.shape]);
      expect((header.dataStart + read.begin) % dtypeAlignment(t.dtype)).toBe(0);
      expect(bytes.subarray(header.dataStart + read.begin, header.dataStart + read.end)).toEqual(t.data);
    }
    // The space padding is part of the header the reader accepted.
    const json = new TextDecoder().decode(bytes.subarray(8, header.dataStart));
    expect(json.trimEnd().endsWith('}')).toBe(true);
    expect(/^ *$/.test(json.slice(json.lastIndexOf('}') + 1))).toBe(true);
  });

  it('property: any small set of tensors survives a round trip', () => {
    const spec = fc.record({
      dtype: fc.constantFrom(...DTYPES),
      shape: fc.array(fc.integer({ min: 0, max: 5 }), { maxLength: 3 }),
    });
    fc.assert(
      fc.property(
        fc.uniqueArray(fc.tuple(fc.string({ minLength: 1, maxLength: 6 }), spec), {
          maxLength: 6,
          selector: (t) => t[0],
        }),
        (items) => {
          const tensors = items
            .filter(([name]) => !/[\p{Cc}\p{Cs}]/u.test(name) && name !== '__metadata__')
            .map(([name, { dtype, shape }]) => {
              const bits = shape.reduce((p, d) => p * d, 1) * dtypeBits(dtype);
              const fixed = bits % 8 === 0 ? shape : [...shape, 8];
              return {
                name,
                dtype,
                shape: fixed,
                data: pseudoRandomBytes(tensorByteLength(dtype, fixed), name.length + 7),
              };
            });
          const bytes = serializeSafetensors(tensors);
          const header = parseSafetensorsHeader(FILE, bytes.length, bytes);
          expect(header.tensors.map((t) => t.name).sort()).toEqual(tensors.map((t) => t.name).sort());
          for (const t of header.tensors)
            expect((header.dataStart + t.begin) % dtypeAlignment(t.dtype)).toBe(0);
        },
      ),
      { numRuns: 300 },
    );
  });
});

/** Parsing either succeeds with a consistent header or throws SafetensorsError; anything else fails the property. */
function parsesOrRejects(bytes: Uint8Array): boolean {
  try {
    const header = parseSafetensorsHeader(FILE, bytes.length, bytes);
    const end = header.tensors.at(-1)?.end ?? 0;
    return header.dataStart + end === bytes.length;
  } catch (error) {
    if (error instanceof SafetensorsError) return true;
    throw error;
  }
}

describe('fuzz properties: only ever our error type', () => {
  const valid = serializeSafetensors(
    [
      { name: 'a', dtype: 'BF16', shape: [3], data: pseudoRandomBytes(6, 1) },
      { name: 'b', dtype: 'F32', shape: [2, 1], data: pseudoRandomBytes(8, 2) },
      { name: 'c', dtype: 'F4', shape: [2], data: pseudoRandomBytes(1, 3) },
      { name: 'd', dtype: 'U8', shape: [0], data: new Uint8Array(0) },
    ],
    { format: 'pt' },
  );

  it('arbitrary bytes', () => {
    fc.assert(fc.property(fc.uint8Array({ maxLength: 300 }), parsesOrRejects), { numRuns: 2000 });
  });

  it('arbitrary bytes behind a plausible header length', () => {
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 200 }), fc.nat({ max: 220 }), (body, n) =>
        parsesOrRejects(rawFile(body, 0, BigInt(n))),
      ),
      { numRuns: 2000 },
    );
  });

  it('arbitrary JSON as the header', () => {
    fc.assert(
      fc.property(fc.json({ maxDepth: 4 }), fc.nat({ max: 64 }), (json, data) =>
        parsesOrRejects(rawFile(json, data)),
      ),
      { numRuns: 1500 },
    );
  });

  it('mutated valid files: flipped, inserted, deleted bytes and truncation', () => {
    const mutation = fc.oneof(
      fc.record({ kind: fc.constant('set' as const), at: fc.nat(), value: fc.integer({ min: 0, max: 255 }) }),
      fc.record({
        kind: fc.constant('insert' as const),
        at: fc.nat(),
        value: fc.integer({ min: 0, max: 255 }),
      }),
      fc.record({ kind: fc.constant('delete' as const), at: fc.nat(), value: fc.constant(0) }),
      fc.record({ kind: fc.constant('truncate' as const), at: fc.nat(), value: fc.constant(0) }),
    );
    fc.assert(
      fc.property(fc.array(mutation, { minLength: 1, maxLength: 4 }), (mutations) => {
        let bytes = Array.from(valid);
        for (const { kind, at, value } of mutations) {
          const i = at % (bytes.length + 1);
          if (kind === 'set' && i < bytes.length) bytes[i] = value;
          if (kind === 'insert') bytes.splice(i, 0, value);
          if (kind === 'delete') bytes.splice(i, 1);
          if (kind === 'truncate') bytes = bytes.slice(0, i);
        }
        return parsesOrRejects(Uint8Array.from(bytes));
      }),
      { numRuns: 3000 },
    );
  });

  it('mutated headers through the async reader', async () => {
    await fc.assert(
      fc.asyncProperty(fc.nat(), fc.integer({ min: 0, max: 255 }), async (at, value) => {
        const bytes = valid.slice();
        bytes[8 + (at % (valid.length - 8))] = value;
        try {
          await readSafetensorsHeader(memorySource(FILE, bytes));
        } catch (error) {
          if (!(error instanceof SafetensorsError)) throw error;
        }
      }),
      { numRuns: 1000 },
    );
  });
});
