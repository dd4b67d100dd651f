// Regenerates the generated parts of the docs from the code, so they never drift:
//   node scripts/gen-docs.mjs          rewrite them
//   node scripts/gen-docs.mjs --check  exit 1 when a file is out of date (run by the tests)
import { readFileSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { auditRecordSchema } from '@gatehouse/audit';
import { baseConfigSchema, configTable } from '@gatehouse/core';
import * as prettier from 'prettier';

const targets = [
  {
    file: new URL('../docs/configuration.md', import.meta.url),
    marker: 'core-config',
    body: configTable(baseConfigSchema),
  },
];

let stale = 0;
// Whole generated files.
const wholeFiles = [
  {
    file: new URL('../docs/audit.schema.json', import.meta.url),
    body: `${JSON.stringify(auditRecordSchema, null, 2)}\n`,
  },
];
for (const { file, body } of wholeFiles) {
  const path = fileURLToPath(file);
  const next = await prettier.format(body, {
    ...(await prettier.resolveConfig(path)),
    filepath: path,
  });
  let current = '';
  try {
    current = readFileSync(file, 'utf8');
  } catch {
    // not generated yet
  }
  if (current !== next) {
    stale++;
    if (!process.argv.includes('--check')) writeFileSync(file, next);
    console.log(`${process.argv.includes('--check') ? 'out of date' : 'updated'}: ${path}`);
  }
}
for (const { file, marker, body } of targets) {
  const text = readFileSync(file, 'utf8');
  const start = `<!-- generated:${marker} -->`;
  const end = `<!-- /generated:${marker} -->`;
  const [before, rest] = text.split(start);
  if (rest === undefined) throw new Error(`${file.pathname}: marker ${start} missing`);
  const after = rest.split(end)[1];
  const path = fileURLToPath(file);
  const options = { ...(await prettier.resolveConfig(path)), filepath: path };
  const next = await prettier.format(`${before}${start}\n${body}\n${end}${after}`, options);
  if (next !== text) {
    stale++;
    if (!process.argv.includes('--check')) writeFileSync(file, next);
    console.log(
      `${process.argv.includes('--check') ? 'out of date' : 'updated'}: ${file.pathname}`,
    );
  }
}
if (process.argv.includes('--check') && stale > 0) process.exit(1);
