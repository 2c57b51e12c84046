// The rooms of src/ and what each may import, checked on every product file (tests may reach across):
// 1. an import between rooms must be in ALLOWED below (the layers point one way: the page reaches the
//    GPU only through the worker, methods never import an engine);
// 2. no cycle between files (Tarjan's components over every relative import, static or dynamic);
// 3. no product file over MAX_LINES lines.
// Each failure is printed with the file and import that causes it, so the fix is findable.
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve, sep } from 'node:path';

const root = resolve(process.argv[2] ?? 'src');
const MAX_LINES = 600;

/** Room → the rooms it may import. A room is a top folder of src/ ('' is src/main.tsx). */
export const ALLOWED = {
  io: [],
  format: ['io'],
  methods: ['format', 'io'],
  demo: ['methods', 'format', 'io'],
  engine: ['methods', 'format', 'io'],
  driver: ['engine', 'methods', 'format', 'io'],
  eval: ['driver', 'engine', 'methods', 'format', 'io'],
  worker: ['eval', 'driver', 'engine', 'methods', 'demo', 'format', 'io'],
  state: ['worker', 'driver', 'methods', 'format', 'io'],
  ui: ['state', 'worker', 'driver', 'methods', 'format', 'io'],
  '': ['ui', 'state'],
  cli: ['eval', 'driver', 'engine', 'methods', 'demo', 'format', 'io'],
  bench: ['cli', 'state', 'worker', 'eval', 'driver', 'engine', 'methods', 'demo', 'format', 'io', 'test'],
  test: ['bench', 'cli', 'worker', 'eval', 'driver', 'engine', 'methods', 'demo', 'format', 'io'],
};

function* sourceFiles(dir) {
  for (const entry of readdirSync(dir)) {
    const path = join(dir, entry);
    if (statSync(path).isDirectory()) yield* sourceFiles(path);
    else if (/\.(ts|tsx)$/.test(entry) && !/\.test\.tsx?$/.test(entry) && !entry.endsWith('.d.ts'))
      yield path;
  }
}

/** The room a file belongs to: its top folder under src/ ('' for files directly in src/). */
function roomOf(file) {
  const parts = relative(root, file).split(sep);
  return parts.length > 1 ? parts[0] : '';
}

/** The file a relative specifier names (extension as written; a folder's index.ts). */
function targetOf(file, spec) {
  const target = resolve(dirname(file), spec.replace(/\?.*$/, ''));
  if (existsSync(target) && statSync(target).isFile()) return target;
  for (const suffix of ['.ts', '.tsx', `${sep}index.ts`])
    if (existsSync(target + suffix)) return target + suffix;
  return target;
}

// Static imports, re-exports and dynamic import() with a literal relative specifier.
const IMPORT =
  /(?:^|[\s;])(?:import|export)\s[^'"]*?from\s*['"](\.[^'"]+)['"]|import\(\s*['"](\.[^'"]+)['"]\s*\)|^import\s*['"](\.[^'"]+)['"]/gm;

const failures = [];
const files = [...sourceFiles(root)];
/** imports.get(file) = the product files it imports. */
const imports = new Map();
for (const file of files) {
  const text = readFileSync(file, 'utf8');
  const name = relative(process.cwd(), file);
  const lines = text.split('\n').length - (text.endsWith('\n') ? 1 : 0);
  if (lines > MAX_LINES)
    failures.push(`${name}: ${lines} lines, over ${MAX_LINES}: split it where its concerns part`);
  const from = roomOf(file);
  const allowed = ALLOWED[from];
  if (!allowed) failures.push(`${name}: room "${from}" has no row in ALLOWED (scripts/check-layers.mjs)`);
  const out = new Set();
  for (const match of text.matchAll(IMPORT)) {
    const spec = match[1] ?? match[2] ?? match[3];
    const target = targetOf(file, spec);
    if (!target.startsWith(root + sep)) continue;
    if (/\.(ts|tsx)$/.test(target)) out.add(target);
    const to = roomOf(target);
    if (to !== from && allowed && !allowed.includes(to))
      failures.push(
        `${name} imports ${spec}: ${from || 'src'} may not import ${to || 'src'} (may: ${allowed.join(', ') || 'nothing'})`,
      );
  }
  imports.set(file, out);
}

// Tarjan's strongly connected components over files: any component of two or more is a cycle.
let counter = 0;
const index = new Map();
const low = new Map();
const stack = [];
const onStack = new Set();
function visit(v) {
  index.set(v, counter);
  low.set(v, counter);
  counter += 1;
  stack.push(v);
  onStack.add(v);
  for (const w of imports.get(v) ?? []) {
    if (!imports.has(w)) continue;
    if (!index.has(w)) {
      visit(w);
      low.set(v, Math.min(low.get(v), low.get(w)));
    } else if (onStack.has(w)) low.set(v, Math.min(low.get(v), index.get(w)));
  }
  if (low.get(v) === index.get(v)) {
    const component = [];
    let w;
    do {
      w = stack.pop();
      onStack.delete(w);
      component.push(w);
    } while (w !== v);
    if (component.length > 1) {
      const members = new Set(component);
      const names = component.map((f) => relative(process.cwd(), f)).sort();
      const closing = component.flatMap((f) =>
        [...(imports.get(f) ?? [])]
          .filter((t) => members.has(t))
          .map((t) => `${relative(process.cwd(), f)} → ${relative(process.cwd(), t)}`),
      );
      failures.push(`import cycle between ${names.join(', ')}:\n    ${closing.join('\n    ')}`);
    }
  }
}
for (const file of files) if (!index.has(file)) visit(file);

if (failures.length === 0) {
  const rooms = [...new Set(files.map(roomOf))].filter(Boolean).sort();
  console.log(
    `check-layers: ${files.length} product files in ${rooms.length} rooms (${rooms.join(', ')}): ` +
      `every import allowed, no cycle between files, none over ${MAX_LINES} lines`,
  );
  process.exit(0);
}
for (const failure of failures) console.error(`check-layers: ${failure}`);
process.exit(1);
