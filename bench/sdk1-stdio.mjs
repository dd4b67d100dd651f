// The no-op tool on SDK 1.0.1 — the SDK the Postgres reference server (server-postgres 0.6.2) is
// built on, written the way that server is (a low-level Server, StdioServerTransport). It
// measures the floor under "warm call vs the reference": what SDK v2's stdio round trip costs
// against SDK 1.0.1's before any Gatehouse or Postgres code.
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { pathToFileURL } from 'node:url';

const reference = dirname(
  createRequire(import.meta.url).resolve('@modelcontextprotocol/server-postgres/package.json'),
);
const sdk = (path) =>
  pathToFileURL(join(reference, 'node_modules/@modelcontextprotocol/sdk/dist', path)).href;
const { Server } = await import(sdk('server/index.js'));
const { StdioServerTransport } = await import(sdk('server/stdio.js'));
const { CallToolRequestSchema, ListToolsRequestSchema } = await import(sdk('types.js'));

const server = new Server({ name: 'sdk1', version: '1.0.0' }, { capabilities: { tools: {} } });
server.setRequestHandler(ListToolsRequestSchema, async () => ({
  tools: [{ name: 'noop', description: 'Does nothing.', inputSchema: { type: 'object' } }],
}));
server.setRequestHandler(CallToolRequestSchema, async () => ({
  content: [{ type: 'text', text: 'ok' }],
}));
await server.connect(new StdioServerTransport());
