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
export { parseSearchQuery, startGitHubFake } from './github-fake.js';
export type {
  FakeComment,
  FakeCredential,
  FakeFailure,
  FakeIssue,
  FakeRepo,
  FakeResponse,
  GitHubFake,
  GitHubFakeOptions,
} from './github-fake.js';
export { validateGitHubResponses } from './github-openapi.js';
export { githubSeed } from './github-seed.js';
export { checkGeneratedDocs, runConformance, runOnOldNode } from './repo-tools.js';
export type { ConformanceRun } from './repo-tools.js';
