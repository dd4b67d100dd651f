// Lays out one server for its image: the workspaces it needs (its own and the @gatehouse
// packages it depends on, transitively) with their built dist/, a package.json whose workspaces
// are just those, and the lockfile — so `npm install --omit=dev` installs the production
// dependencies at the locked versions and nothing of the other servers or the test tools.
// Usage (in the build stage): node docker/prune.mjs <server> <out-dir>
import {
  cpSync,
  existsSync,
  mkdirSync,
  readFileSync,
  readdirSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { join } from 'node:path';

const [server, out] = process.argv.slice(2);
if (!server || !out) throw new Error('usage: node docker/prune.mjs <server> <out-dir>');
const read = (path) => JSON.parse(readFileSync(path, 'utf8'));

const byName = new Map();
for (const root of ['packages', 'servers']) {
  for (const dir of readdirSync(root)) {
    const path = join(root, dir);
    if (existsSync(join(path, 'package.json')))
      byName.set(read(join(path, 'package.json')).name, path);
  }
}
const start = join('servers', server);
const needed = new Set([start]);
for (const path of needed) {
  for (const dep of Object.keys(read(join(path, 'package.json')).dependencies ?? {})) {
    if (byName.has(dep)) needed.add(byName.get(dep));
  }
}

mkdirSync(out, { recursive: true });
const root = read('package.json');
writeFileSync(
  join(out, 'package.json'),
  `${JSON.stringify({ name: root.name, private: true, type: root.type, workspaces: [...needed] }, null, 2)}\n`,
);
cpSync('package-lock.json', join(out, 'package-lock.json'));
cpSync('.npmrc', join(out, '.npmrc'));
for (const path of needed) {
  const manifest = read(join(path, 'package.json'));
  delete manifest.devDependencies;
  delete manifest.scripts;
  mkdirSync(join(out, path), { recursive: true });
  writeFileSync(join(out, path, 'package.json'), `${JSON.stringify(manifest, null, 2)}\n`);
  cpSync(join(path, 'dist'), join(out, path, 'dist'), {
    recursive: true,
    filter: (src) =>
      !src.endsWith('.d.ts') && !src.endsWith('.d.ts.map') && !src.endsWith('.tsbuildinfo'),
  });
}
// The entry point of the image: the server's bin (its shebang carries the node flags it needs).
const bin = Object.values(read(join(start, 'package.json')).bin ?? {})[0];
if (typeof bin !== 'string') throw new Error(`${start}/package.json has no bin`);
symlinkSync(join(start, bin), join(out, 'server'));
process.stdout.write(`prune: ${server} with ${[...needed].join(', ')}\n`);
