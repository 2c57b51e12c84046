// The writer: layout order and padding, every rejection, and the stream writer against
// serializeSafetensors byte for byte whatever the chunking.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { at, must } from '../io/checked.ts';
import { memoryFolder } from '../io/sink.ts';
import { SafetensorsError, type SafetensorsErrorCode } from '../io/errors.ts';
import { parseSafetensorsHeader } from './safetensors.ts';
import {
  compareNames,
  layoutSafetensors,
  SafetensorsStreamWriter,
  serializeSafetensors,
  type TensorSpec,
} from './write.ts';

function codeOf(run: () => unknown): SafetensorsErrorCode | undefined {
  try {
    run();
  } catch (error) {
    expect(error).toBeInstanceOf(SafetensorsError);
    return (error as SafetensorsError).code;
  }
  return undefined;
}

async function asyncCodeOf(run: () => Promise<unknown>): Promise<SafetensorsErrorCode | undefined> {
  try {
    await run();
  } catch (error) {
    expect(error).toBeInstanceOf(SafetensorsError);
    return (error as SafetensorsError).code;
  }
  return undefined;
}

describe('layoutSafetensors', () => {
  it('orders by dtype alignment, then name, and pads the header with spaces to a multiple of 8', () => {
    const layout = layoutSafetensors(
      [
        { name: 'b', dtype: 'U8', shape: [3] },
        { name: 'a', dtype: 'U8', shape: [1] },
        { name: 'z', dtype: 'F64', shape: [1] },
        { name: 'm', dtype: 'BF16', shape: [3] },
        { name: 'f', dtype: 'F32', shape: [1] },
        { name: 'e', dtype: 'I32', shape: [1] },
        { name: 'q', dtype: 'F4', shape: [2] },
      ],
      { format: 'pt' },
    );
    expect(layout.tensors.map((t) => t.name)).toEqual(['z', 'e', 'f', 'm', 'a', 'b', 'q']);
    expect(layout.tensors.map((t) => [t.begin, t.end])).toEqual([
      [0, 8],
      [8, 12],
      [12, 16],
      [16, 22],
      [22, 23],
      [23, 26],
      [26, 27],
    ]);
    const n = Number(new DataView(layout.header.buffer).getBigUint64(0, true));
    expect(n % 8).toBe(0);
    expect(layout.header.length).toBe(8 + n);
    expect(layout.fileSize).toBe(8 + n + 27);
    const json = new TextDecoder().decode(layout.header.subarray(8));
    expect(
      json.startsWith('{"__metadata__":{"format":"pt"},"z":{"dtype":"F64","shape":[1],"data_offsets":[0,8]}'),
    ).toBe(true);
    expect(json.trimEnd().length).toBeGreaterThan(n - 8);
    expect(json.slice(json.trimEnd().length)).toMatch(/^ {0,7}$/);
  });

  it('sorts names in UTF-8 byte order, as the reference does', () => {
    const names = ['b', 'a', '\u{1F600}', '\uFF5E', 'B', 'é'];
    expect([...names].sort(compareNames)).toEqual(['B', 'a', 'b', 'é', '\uFF5E', '\u{1F600}']);
    const bytes = names.map((name) => Array.from(new TextEncoder().encode(name)));
    const byBytes = [...bytes].sort((x, y) => {
      for (let i = 0; i < Math.min(x.length, y.length); i++) if (x[i] !== y[i]) return at(x, i) - at(y, i);
      return x.length - y.length;
    });
    expect([...names].sort(compareNames).map((name) => Array.from(new TextEncoder().encode(name)))).toEqual(
      byBytes,
    );
  });

  it('omits empty metadata and writes an empty file for no tensors', () => {
    const layout = layoutSafetensors([]);
    expect(new TextDecoder().decode(layout.header.subarray(8))).toBe('{}      ');
    expect(parseSafetensorsHeader('e', layout.fileSize, layout.header).tensors).toEqual([]);
  });

  it.each<[string, TensorSpec[], Record<string, string> | undefined, SafetensorsErrorCode]>([
    [
      'a tensor named __metadata__',
      [{ name: '__metadata__', dtype: 'U8', shape: [1] }],
      undefined,
      'InvalidName',
    ],
    ['a NUL in a name', [{ name: 'a\0b', dtype: 'U8', shape: [1] }], undefined, 'InvalidName'],
    [
      'a control character in a name',
      [{ name: 'a\u0085b', dtype: 'U8', shape: [1] }],
      undefined,
      'InvalidName',
    ],
    ['a lone surrogate in a name', [{ name: 'a\ud800', dtype: 'U8', shape: [1] }], undefined, 'InvalidName'],
    ['an empty name', [{ name: '', dtype: 'U8', shape: [1] }], undefined, 'InvalidName'],
    [
      'duplicate names',
      [
        { name: 'w', dtype: 'U8', shape: [1] },
        { name: 'w', dtype: 'F32', shape: [1] },
      ],
      undefined,
      'DuplicateTensor',
    ],
    ['an unknown dtype', [{ name: 'w', dtype: 'F128' as never, shape: [1] }], undefined, 'TensorInvalidInfo'],
    ['a fractional dimension', [{ name: 'w', dtype: 'U8', shape: [1.5] }], undefined, 'TensorInvalidInfo'],
    ['a sub-byte remainder', [{ name: 'w', dtype: 'F6_E2M3', shape: [3] }], undefined, 'MisalignedSlice'],
    ['a non-string metadata value', [], { step: 3 as unknown as string }, 'InvalidHeaderDeserialization'],
    ['a lone surrogate in metadata', [], { note: '\udc00' }, 'InvalidHeaderDeserialization'],
  ])('rejects %s', (_, tensors, metadata, code) => {
    expect(codeOf(() => layoutSafetensors(tensors, metadata))).toBe(code);
  });

  it('rejects a header over 100 MB', () => {
    expect(codeOf(() => layoutSafetensors([], { big: 'x'.repeat(100_000_000) }))).toBe(
      'HeaderTooLargeToWrite',
    );
  });

  it('names the output file and tensor in its errors', () => {
    try {
      layoutSafetensors(
        [{ name: '__metadata__', dtype: 'U8', shape: [] }],
        {},
        'model-00002-of-00003.safetensors',
      );
      expect.fail('accepted');
    } catch (error) {
      expect((error as Error).message).toMatch(/^model-00002-of-00003\.safetensors: __metadata__: /);
    }
  });
});

describe('serializeSafetensors', () => {
  it('rejects data of the wrong length', () => {
    expect(
      codeOf(() => serializeSafetensors([{ name: 'w', dtype: 'F32', shape: [2], data: new Uint8Array(7) }])),
    ).toBe('WriteMismatch');
  });
});

const SPECS: (TensorSpec & { data: Uint8Array })[] = [
  { name: 'embed', dtype: 'BF16', shape: [5, 3], data: Uint8Array.from({ length: 30 }, (_, i) => i) },
  { name: 'empty', dtype: 'F32', shape: [0, 4], data: new Uint8Array(0) },
  { name: 'bias', dtype: 'F32', shape: [3], data: Uint8Array.from({ length: 12 }, (_, i) => 100 + i) },
  { name: 'scale', dtype: 'F64', shape: [], data: Uint8Array.from({ length: 8 }, (_, i) => 200 + i) },
  { name: 'mask', dtype: 'BOOL', shape: [7], data: Uint8Array.from({ length: 7 }, (_, i) => i & 1) },
  { name: 'nibbles', dtype: 'F4', shape: [2, 3], data: Uint8Array.from([1, 2, 3]) },
];

describe('SafetensorsStreamWriter', () => {
  it('property: any chunking yields serializeSafetensors byte for byte', async () => {
    const expected = serializeSafetensors(SPECS, { format: 'pt' });
    await fc.assert(
      fc.asyncProperty(
        fc.array(fc.integer({ min: 0, max: 9 }), { minLength: 1, maxLength: 20 }),
        fc.boolean(),
        async (sizes, skipEmpty) => {
          const folder = memoryFolder('out');
          const layout = layoutSafetensors(SPECS, { format: 'pt' });
          const writer = new SafetensorsStreamWriter(
            await folder.create('model.safetensors'),
            layout,
            'model.safetensors',
          );
          let s = 0;
          for (const t of layout.tensors) {
            const data = must(
              SPECS.find((spec) => spec.name === t.name),
              t.name,
            ).data;
            if (data.length === 0 && skipEmpty) continue;
            let pos = 0;
            do {
              // A 0 in `sizes` sends an empty chunk, then carries on with one byte.
              const wanted = at(sizes, s++ % sizes.length);
              if (wanted === 0) await writer.writeTensorBytes(t.name, new Uint8Array(0));
              const size = Math.min(Math.max(wanted, 1), data.length - pos);
              await writer.writeTensorBytes(t.name, data.subarray(pos, pos + size));
              pos += size;
            } while (pos < data.length);
          }
          await writer.close();
          expect(folder.files.get('model.safetensors')).toEqual(expected);
        },
      ),
      { numRuns: 200 },
    );
  });

  async function started(): Promise<{
    writer: SafetensorsStreamWriter;
    folder: ReturnType<typeof memoryFolder>;
  }> {
    const folder = memoryFolder('out');
    const layout = layoutSafetensors(SPECS);
    return {
      writer: new SafetensorsStreamWriter(await folder.create('m.safetensors'), layout, 'm.safetensors'),
      folder,
    };
  }

  it('refuses a tensor out of layout order, and leaves its state unchanged', async () => {
    const { writer, folder } = await started();
    await writer.writeTensorBytes('scale', new Uint8Array(4));
    expect(await asyncCodeOf(() => writer.writeTensorBytes('bias', new Uint8Array(4)))).toBe('WriteMismatch');
    await writer.writeTensorBytes('scale', new Uint8Array(4));
    await writer.writeTensorBytes('bias', new Uint8Array(12));
    expect(await asyncCodeOf(() => writer.writeTensorBytes('scale', new Uint8Array(1)))).toBe(
      'WriteMismatch',
    );
    await writer.abort();
    expect(folder.files.size).toBe(0);
  });

  it('refuses an unknown tensor and too many bytes', async () => {
    const { writer } = await started();
    const unknown = writer.writeTensorBytes('nope', new Uint8Array(1));
    await expect(unknown).rejects.toThrow(/nope: this tensor is not in the layout/);
    await expect(writer.writeTensorBytes('scale', new Uint8Array(9))).rejects.toThrow(
      /9 bytes arrived for a tensor of 8 bytes/,
    );
  });

  it('discards the file when closed before every byte arrived', async () => {
    const { writer, folder } = await started();
    await writer.writeTensorBytes('scale', new Uint8Array(8));
    await writer.writeTensorBytes('bias', new Uint8Array(5));
    await expect(writer.close()).rejects.toThrow(/m\.safetensors: bias: closed with 7 bytes still missing/);
    expect(folder.files.size).toBe(0);
    await writer.abort();
    expect(await asyncCodeOf(() => writer.writeTensorBytes('bias', new Uint8Array(7)))).toBe('WriteMismatch');
  });

  it('writes a file of only empty tensors without any tensor call', async () => {
    const folder = memoryFolder('out');
    const specs = [{ name: 'e', dtype: 'F32' as const, shape: [0], data: new Uint8Array(0) }];
    const writer = new SafetensorsStreamWriter(
      await folder.create('e.safetensors'),
      layoutSafetensors(specs),
      'e.safetensors',
    );
    await writer.close();
    expect(folder.files.get('e.safetensors')).toEqual(serializeSafetensors(specs));
  });

  it('aborts the sink when committing fails', async () => {
    const calls: string[] = [];
    const sink = {
      write: async () => void calls.push('write'),
      close: async () => {
        calls.push('close');
        throw new Error('disk full');
      },
      abort: async () => void calls.push('abort'),
    };
    const writer = new SafetensorsStreamWriter(sink, layoutSafetensors([]), 'x.safetensors');
    await expect(writer.close()).rejects.toThrow('disk full');
    await writer.abort();
    expect(calls).toEqual(['write', 'close', 'abort']);
  });
});
