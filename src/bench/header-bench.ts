// Times the worker's open of the e2e's 300,000-tensor header (same shape as e2e/inputs.spec.ts)
// outside a browser: the header parse, openModel, the open reply's encoding and its structured clone
// (what postMessage costs, both sides together).
import { memorySource } from '../io/source.ts';
import { openModel } from '../format/model.ts';
import { parseSafetensorsHeader } from '../format/safetensors.ts';
import { summarizeModel } from '../engine/model-transfer.ts';

function manyTensors(count: number): Uint8Array {
  const entries: string[] = [];
  for (let i = 0; i < count; i++)
    entries.push(`"blocks.${i}.scale":{"dtype":"F32","shape":[1],"data_offsets":[${4 * i},${4 * i + 4}]}`);
  let header = `{${entries.join(',')}}`;
  header += ' '.repeat((8 - (header.length % 8)) % 8);
  const text = new TextEncoder().encode(header);
  const prefix = new Uint8Array(8 + text.length);
  new DataView(prefix.buffer).setBigUint64(0, BigInt(text.length), true);
  prefix.set(text, 8);
  return prefix;
}

const count = Number(process.argv[2] ?? 300_000);
const runs = Number(process.argv[3] ?? 3);
const prefix = manyTensors(count);
const fileSize = prefix.length + 4 * count;
for (let run = 0; run < runs; run++) {
  const start = performance.now();
  const header = parseSafetensorsHeader('many.safetensors', fileSize, prefix);
  const ms = performance.now() - start;
  // openModel is what the engine worker runs on a dropped file: the header, then the model's tensor map.
  const bytes = new Uint8Array(fileSize);
  bytes.set(prefix);
  const opened = performance.now();
  const model = await openModel('many', [
    { name: 'many.safetensors', source: memorySource('many.safetensors', bytes) },
  ]);
  const modelMs = performance.now() - opened;
  const encoded = performance.now();
  const reply = summarizeModel(model);
  const encodeMs = performance.now() - encoded;
  const cloned = performance.now();
  structuredClone(reply);
  const cloneMs = performance.now() - cloned;
  console.log(
    `run ${run + 1}: header of ${header.tensors.length} tensors in ${ms.toFixed(0)} ms; openModel (${model.tensors.size} tensors) in ${modelMs.toFixed(0)} ms; open reply encoded in ${encodeMs.toFixed(0)} ms, cloned in ${cloneMs.toFixed(0)} ms`,
  );
}
