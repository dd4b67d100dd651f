import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    testTimeout: 120_000,
    // Building the images (the first one compiles every workspace) takes a few minutes.
    hookTimeout: 900_000,
    // The image test and the manifest tests share no state; the images are built once.
    fileParallelism: false,
  },
});
