// Fails when the folders under src/ import each other in a cycle: the layers must only point down
// (ui → state → engine → methods → format → io). Test files are left out (a test may reach across).
// Prints each cycle with one import that closes it, so the fix is findable.
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve, sep } from 'node:path';

const root = resolve(process.argv[2] ?? 'src');

function* sourceFiles(dir) {
  for (const entry of readdirSync(dir)) {
    const path = join(dir, entry);
    if (statSync(path).isDirectory()) yield* sourceFiles(path);
    else if (/\.(ts|tsx)$/.test(entry) && !/\.test\.tsx?$/.test(entry) && !entry.endsWith('.d.ts'))
      yield path;
  }
}

/** The top folder of src/ a file belongs to ('' for files directly in src/). */
function folderOf(file) {
  const parts = relative(root, file).split(sep);
  return parts.length > 1 ? parts[0] : '';
}

// Static imports, re-exports and dynamic import() with a literal relative specifier.
const IMPORT =
  /(?:^|[\s;])(?:import|export)\s[^'"]*?from\s*['"](\.[^'"]+)['"]|import\(\s*['"](\.[^'"]+)['"]\s*\)|^import\s*['"](\.[^'"]+)['"]/gm;

/** edges.get(a).get(b) = one example "file → specifier" of folder a importing folder b. */
const edges = new Map();
for (const file of sourceFiles(root)) {
  const from = folderOf(file);
  if (from === '') continue;
  const text = readFileSync(file, 'utf8');
  for (const match of text.matchAll(IMPORT)) {
    const spec = (match[1] ?? match[2] ?? match[3]).replace(/\?.*$/, '');
    const target = resolve(dirname(file), spec);
    if (!target.startsWith(root + sep)) continue;
    const to = folderOf(target);
    if (to === '' || to === from) continue;
    if (!edges.has(from)) edges.set(from, new Map());
    const out = edges.get(from);
    if (!out.has(to)) out.set(to, `${relative(process.cwd(), file)} imports ${spec}`);
  }
}

// Tarjan's strongly connected components: any component of two or more folders is a cycle.
let counter = 0;
const index = new Map();
const low = new Map();
const stack = [];
const onStack = new Set();
const components = [];
function visit(v) {
  index.set(v, counter);
  low.set(v, counter);
  counter += 1;
  stack.push(v);
  onStack.add(v);
  for (const w of edges.get(v)?.keys() ?? []) {
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
    if (component.length > 1) components.push(component.sort());
  }
}
const folders = new Set([...edges.keys(), ...[...edges.values()].flatMap((m) => [...m.keys()])]);
for (const folder of [...folders].sort()) if (!index.has(folder)) visit(folder);

if (components.length === 0) {
  const order = [...folders].sort();
  console.log(
    `check-layers: no import cycle between the folders of ${relative(process.cwd(), root) || '.'} (${order.join(', ')})`,
  );
  process.exit(0);
}
for (const component of components) {
  console.error(`check-layers: these folders import each other in a cycle: ${component.join(', ')}`);
  const members = new Set(component);
  for (const from of component)
    for (const [to, example] of edges.get(from) ?? [])
      if (members.has(to)) console.error(`  ${from} → ${to}: ${example}`);
}
process.exit(1);
