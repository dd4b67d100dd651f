import { fileURLToPath } from 'node:url';
import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    // One PostgreSQL for the run (embedded, or GATEHOUSE_TEST_PG_URL); each file takes a database.
    globalSetup: [fileURLToPath(import.meta.resolve('@gatehouse/testkit/postgres-setup'))],
    testTimeout: 30_000,
    hookTimeout: 120_000,
  },
});
