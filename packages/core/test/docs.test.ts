import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';

const script = fileURLToPath(new URL('../../../scripts/gen-docs.mjs', import.meta.url));

describe('generated documentation', () => {
  it('matches the code (run `npm run docs` after changing the config schema)', async () => {
    const result = await promisify(execFile)(process.execPath, [
      script,
      '--check',
      '--scope',
      'core',
    ]).catch((error: { code: number; stdout: string }) => error);
    expect('code' in result ? result.stdout : '').toBe('');
  });
});
