import { defineConfig } from 'vitest/config';
// Timeouts scaled for this machine (a loaded 2-core one gets longer): GATEHOUSE_TEST_TIME_SCALE.
import { scaled } from '@gatehouse/testkit/time';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    testTimeout: scaled(30_000),
    hookTimeout: scaled(60_000),
  },
});
