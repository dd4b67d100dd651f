// The baseline: the no-op tool on a bare SDK v2 McpServer. Imports the SDK and zod only — never
// Gatehouse code — so the baselines' cold start and memory are the SDK's own.
import { McpServer } from '@modelcontextprotocol/server';
import * as z from 'zod';

export function bareFactory() {
  return () => {
    const server = new McpServer({ name: 'bare', version: '1.0.0' });
    server.registerTool(
      'noop',
      {
        title: 'No-op',
        description: 'Does nothing.',
        inputSchema: z.strictObject({}),
        annotations: {
          readOnlyHint: true,
          destructiveHint: false,
          idempotentHint: true,
          openWorldHint: false,
        },
      },
      async () => ({ content: [{ type: 'text', text: 'ok' }] }),
    );
    return server;
  };
}
