import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    globalSetup: ['./src/postgres-setup.ts'],
    testTimeout: 30_000,
    hookTimeout: 120_000,
  },
});
