#!/usr/bin/env node
// `npm test`: every check of the repository, in order, each run even when one before it failed —
// so one run reports every failure — then a summary of what failed. Only a missing machine tool
// stops it at once (the rest would fail for that reason alone). Turborepo continues past a failed
// task to every task whose dependencies succeeded. Off a terminal (CI, a log file) no colour
// codes: NO_COLOR for every tool.
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const bin = (name) => join(ROOT, 'node_modules/.bin', name);
const env = { ...process.env, ...(process.stdout.isTTY ? {} : { NO_COLOR: '1' }) };
if (env.NO_COLOR !== undefined) delete env.FORCE_COLOR;

const steps = [
  ['the machine tools the tests drive', process.execPath, ['scripts/ensure-tools.mjs'], 'stop'],
  ['formatting (Prettier)', bin('prettier'), ['--check', '.']],
  ['lint of bench/, scripts/, docker/*.mjs', bin('eslint'), ['bench', 'scripts', 'docker/*.mjs']],
  ['no import circles', process.execPath, ['scripts/import-cycles.mjs']],
  // Every workspace built before any test: the deployment tests use every server without listing
  // one as a dependency (a fifth server touches nothing outside its folder, ADR 0018).
  ['every workspace: build', bin('turbo'), ['run', 'build', '--continue=dependencies-successful']],
  [
    'every workspace: typecheck, lint, test',
    bin('turbo'),
    ['run', 'typecheck', 'lint', 'test', '--only', '--continue'],
  ],
  ['the container images', 'npm', ['run', 'test:images', '-w', '@gatehouse/deploy']],
];

const failed = [];
for (const [what, command, args, onFailure] of steps) {
  process.stderr.write(`\ntest: ${what}…\n`);
  const run = spawnSync(command, args, { cwd: ROOT, env, stdio: 'inherit' });
  if (run.status === 0) continue;
  failed.push(`${what} (${run.error?.message ?? run.signal ?? `exit ${run.status}`})`);
  if (onFailure === 'stop') break;
}
process.stderr.write(
  failed.length === 0
    ? '\ntest: everything passed.\n'
    : `\ntest: ${failed.length} step(s) failed — see each above:\n${failed.map((f) => `  ✗ ${f}`).join('\n')}\n`,
);
process.exit(failed.length === 0 ? 0 : 1);
