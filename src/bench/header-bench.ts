// Times the worker's open and check of the e2e's 300,000-tensor header (same file as
// e2e/inputs.spec.ts) outside a browser, stage by stage, wall and CPU time: the header's UTF-8
// decode and scan, openModel (header and tensor map), the adapter check, the open reply's encoding
// and structured clone, then the compatibility check against the demo base (its reply) and its clone.
// `node --import ./bin/register.mjs src/bench/header-bench.ts [TENSORS] [RUNS]`
import { join } from 'node:path';
import { memorySource } from '../io/source.ts';
import { nodeModelFiles } from '../io/node.ts';
import { compatColumns } from '../format/compat.ts';
import { openModel } from '../format/model.ts';
import { detectAdapter } from '../format/peft.ts';
import { scanRegularHeader } from '../format/header-scan.ts';
import { summarizeModel } from '../driver/model-transfer.ts';

function manyTensors(count: number): Uint8Array {
  const entries: string[] = [];
  for (let i = 0; i < count; i++)
    entries.push(`"blocks.${i}.scale":{"dtype":"F32","shape":[1],"data_offsets":[${4 * i},${4 * i + 4}]}`);
  let header = `{${entries.join(',')}}`;
  header += ' '.repeat((8 - (header.length % 8)) % 8);
  const text = new TextEncoder().encode(header);
  const bytes = new Uint8Array(8 + text.length + 4 * count);
  new DataView(bytes.buffer).setBigUint64(0, BigInt(text.length), true);
  bytes.set(text, 8);
  return bytes;
}

/** Runs one stage and records its wall and CPU milliseconds under `name`. */
function timer(): {
  stage<T>(name: string, run: () => T): T;
  line(): string;
} {
  const rows: [string, number, number][] = [];
  return {
    stage(name, run) {
      const cpu = process.cpuUsage();
      const started = performance.now();
      const result = run();
      const wall = performance.now() - started;
      const used = process.cpuUsage(cpu);
      rows.push([name, wall, (used.user + used.system) / 1000]);
      return result;
    },
    line: () => rows.map(([name, wall, cpu]) => `${name} ${wall.toFixed(0)}/${cpu.toFixed(0)}`).join(', '),
  };
}

const count = Number(process.argv[2] ?? 300_000);
const runs = Number(process.argv[3] ?? 3);
const bytes = manyTensors(count);
const headerLength = Number(new DataView(bytes.buffer).getBigUint64(0, true));
const base = await openModel('base', await nodeModelFiles(join('public', 'demo', 'base')));
console.log(`${count} tensors, header ${(headerLength / 1e6).toFixed(1)} MB; each stage as wall/CPU ms`);
for (let run = 0; run < runs; run++) {
  const t = timer();
  const text = t.stage('decode', () =>
    new TextDecoder('utf-8', { fatal: true }).decode(bytes.subarray(8, 8 + headerLength)),
  );
  t.stage('scan', () => scanRegularHeader(text));
  // openModel is what the engine worker runs on a picked file: the header, then the model's tensor map.
  const started = performance.now();
  const cpu = process.cpuUsage();
  const model = await openModel('many', [{ name: 'many.safetensors', source: memorySource('many', bytes) }]);
  const used = process.cpuUsage(cpu);
  const openLine = `openModel ${(performance.now() - started).toFixed(0)}/${((used.user + used.system) / 1000).toFixed(0)}`;
  t.stage('adapter', () => detectAdapter(null, [...model.tensors.values()], 'many.safetensors'));
  const summary = t.stage('open reply', () => summarizeModel(model));
  t.stage('open clone', () => structuredClone(summary));
  const compat = t.stage('check', () => compatColumns(base, [model]));
  t.stage('check clone', () => structuredClone(compat));
  console.log(`run ${run + 1}: ${openLine}; ${t.line()}`);
}
