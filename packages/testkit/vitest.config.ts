import { defineConfig } from 'vitest/config';
// Timeouts scaled for this machine (a loaded 2-core one gets longer): GATEHOUSE_TEST_TIME_SCALE.
import { scaled } from './src/time.js';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    globalSetup: ['./src/postgres-setup.ts'],
    testTimeout: scaled(30_000),
    hookTimeout: scaled(120_000),
  },
});
