// The no-op tool the core benchmarks serve, on its own so that the stdio server script
// (core-stdio.mjs) loads what a bin loads — `@gatehouse/core` — and not the runtime index that
// servers.mjs needs (which re-exports the HTTP, auth and metrics modules a stdio bin never loads).
import { READ_ONLY_ANNOTATIONS, defineServer, defineTool } from '@gatehouse/core';
import * as z from 'zod';

export const coreDefinition = defineServer({
  name: 'core',
  version: '1.0.0',
  tools: [
    defineTool({
      name: 'noop',
      title: 'No-op',
      description: 'Does nothing.',
      access: 'read',
      annotations: READ_ONLY_ANNOTATIONS,
      input: z.strictObject({}),
      handler: async () => 'ok',
    }),
  ],
});
