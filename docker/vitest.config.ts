import { defineConfig } from 'vitest/config';
// Timeouts scaled for this machine (a loaded 2-core one gets longer): GATEHOUSE_TEST_TIME_SCALE.
import { scaled } from '@gatehouse/testkit/time';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    testTimeout: scaled(120_000),
    // Building the images (the first one compiles every workspace) takes a few minutes.
    hookTimeout: scaled(900_000),
    // The image test and the manifest tests share no state; the images are built once.
    fileParallelism: false,
  },
});
