// The same no-op tool on the bare SDK: createMcpHandler + toNodeHandler on node:http, stateless,
// no auth, no audit. Prints its URL on stdout.
import { createServer } from 'node:http';
import { toNodeHandler } from '@modelcontextprotocol/node';
import { createMcpHandler } from '@modelcontextprotocol/server';
import { bareFactory } from './bare.mjs';

const handler = toNodeHandler(createMcpHandler(bareFactory()));
const server = createServer((req, res) => void handler(req, res));
server.keepAliveTimeout = 65_000;
server.listen(0, '127.0.0.1', () => {
  process.stdout.write(`http://127.0.0.1:${server.address().port}/mcp\n`);
});
process.on('SIGTERM', () => process.exit(0));
