/** `@gatehouse/testkit`: real clients and real processes for testing Gatehouse servers. */
export {
  MODERN_REVISION,
  connectHttp,
  connectInMemory,
  connectStdio,
  createClient,
  initializeRequest,
  spawnServer,
} from './clients.js';
export type {
  ClientOptions,
  Connection,
  Era,
  LogLine,
  ServerProcess,
  StdioConnection,
} from './clients.js';
export { startTestIssuer } from './oauth.js';
export type { TestIssuer } from './oauth.js';
export { memoryAudit } from './audit.js';
export type { MemoryAudit } from './audit.js';
