#!/usr/bin/env node
// `npm run demo`: builds the Postgres server and the packages it uses (saying so), then runs the
// demo (servers/postgres/demo/run.mjs) in this same process. One process, not `build && node`
// under npm's shell: a Ctrl-C, or a SIGINT or SIGTERM sent to npm (which passes it to this
// process), reaches the demo's own handler, which stops what it started and removes what it wrote.
// GATEHOUSE_DEMO_BUILD=0 skips the build (the tests run the built tree so).
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = fileURLToPath(new URL('..', import.meta.url));

// The Node check comes first: an old Node should hear so at once, not after a build. The built
// check (@gatehouse/audit/node-check) does not exist yet on a fresh clone, so the oldest
// supported version is read where it is declared, the root package's `engines`.
const wanted = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')).engines.node;
const [minMajor, minMinor = 0] = wanted
  .replace(/^>=\s*/, '')
  .split('.')
  .map(Number);
const [major, minor] = process.versions.node.split('.').map(Number);
if (major < minMajor || (major === minMajor && minor < minMinor)) {
  process.stderr.write(
    `demo: Gatehouse needs Node.js ${minMajor}.${minMinor} or later (Node 24 LTS is recommended); this is Node.js ${process.versions.node}. Install a newer Node.js and run it again. Nothing was built.\n`,
  );
  process.exit(1);
}

if (process.env.GATEHOUSE_DEMO_BUILD !== '0') {
  process.stderr.write(
    'demo: building the Postgres server and the packages it uses (turbo; about a minute the first time, seconds after)…\n',
  );
  const build = spawn(
    join(ROOT, 'node_modules/.bin/turbo'),
    ['run', 'build', '--filter=@gatehouse/server-postgres...', '--output-logs=errors-only'],
    { cwd: ROOT, stdio: ['ignore', 'inherit', 'inherit'] },
  );
  // Stopped while building: the build stops too, and nothing has been started yet.
  const stop = (signal) => build.kill(signal);
  process.on('SIGINT', stop).on('SIGTERM', stop);
  const [code, signal] = await new Promise((resolve) =>
    build.on('exit', (c, s) => resolve([c, s])),
  );
  process.off('SIGINT', stop).off('SIGTERM', stop);
  if (signal !== null || code !== 0) {
    process.stderr.write(
      signal !== null
        ? `demo: stopped while building (${signal}); nothing was started\n`
        : 'demo: the build failed (above); nothing was started\n',
    );
    process.exit(signal === null ? (code ?? 1) : 130);
  }
}
// The workspace bins (gatehouse-audit, whose `npx gatehouse-audit verify …` line the demo prints)
// are linked once they are built: `npm ci` cannot link a bin before it exists, and `npx` would
// then ask the public registry for that name.
if (!existsSync(join(ROOT, 'node_modules/.bin/gatehouse-audit'))) {
  spawnSync('npm', ['rebuild', '--ignore-scripts', '--silent'], { cwd: ROOT, stdio: 'ignore' });
}
await import('../servers/postgres/demo/run.mjs');
