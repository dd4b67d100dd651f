#!/usr/bin/env node
// Fails when the relative imports of a package's src/ form a circle — type-only imports too: a
// circle of types still ties two modules into one (issue 24). Prints each circle found.
import { readFileSync, readdirSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const IMPORT = /^\s*(?:import|export)\s[^;]*?from\s+'(\.{1,2}\/[^']+)'/gm;

/** Every .ts file below `dir`. */
function sources(dir) {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) return sources(path);
    return path.endsWith('.ts') ? [path] : [];
  });
}

/** The files `file` imports relatively, as paths of .ts files. */
function importsOf(file) {
  const text = readFileSync(file, 'utf8');
  return [
    ...new Set(
      [...text.matchAll(IMPORT)].map((m) => resolve(dirname(file), m[1].replace(/\.js$/, '.ts'))),
    ),
  ];
}

const circles = [];
for (const group of ['packages', 'servers']) {
  for (const name of readdirSync(join(root, group))) {
    const src = join(root, group, name, 'src');
    let files;
    try {
      files = sources(src);
    } catch {
      continue;
    }
    const graph = new Map(files.map((f) => [f, importsOf(f)]));
    const state = new Map(); // 1: on the path, 2: done
    const path = [];
    const visit = (file) => {
      state.set(file, 1);
      path.push(file);
      for (const next of graph.get(file) ?? []) {
        if (!graph.has(next)) continue;
        if (state.get(next) === 1)
          circles.push([...path.slice(path.indexOf(next)), next].map((f) => relative(root, f)));
        else if (state.get(next) === undefined) visit(next);
      }
      path.pop();
      state.set(file, 2);
    };
    for (const file of files) if (state.get(file) === undefined) visit(file);
  }
}

if (circles.length > 0) {
  for (const circle of circles) console.error(`import circle: ${circle.join(' → ')}`);
  process.exit(1);
}
console.log('import-cycles: no circle in any package');
