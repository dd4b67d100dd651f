import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    testTimeout: 30_000,
    hookTimeout: 120_000,
    // jira.js's schemas become strict (unknown keys fail) when this is set as it loads: every
    // response of the Jira fake is then checked against Jira's own specification.
    env: { AUDIT_SCHEMAS: 'true' },
  },
});
