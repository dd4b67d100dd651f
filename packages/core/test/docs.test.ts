import { checkGeneratedDocs } from '@gatehouse/testkit';
import { describe, expect, it } from 'vitest';

describe('generated documentation', () => {
  it('matches the code (run `npm run docs` after changing the config schema)', async () => {
    expect(await checkGeneratedDocs('core')).toBe('');
  });
});
