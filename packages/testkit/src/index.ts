/**
 * `@gatehouse/testkit`: real clients and real processes for testing Gatehouse servers, and the
 * loopback HTTP fake framework vendor fakes are built on. Vendor fakes and heavy dependencies sit
 * behind subpaths: `@gatehouse/testkit/github` (the GitHub fake, its OpenAPI validation),
 * `@gatehouse/testkit/postgres` (embedded PostgreSQL).
 */
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
export { TestBrowser } from './browser.js';
export { seededRandom } from './random.js';
export {
  HOSTILE_MARKER,
  HOSTILE_TEXT,
  answerProblems,
  answerStrings,
  hostileProblems,
  sweepRoads,
  unframed,
} from './hostile.js';
export type { MemoryAudit } from './audit.js';
export { HttpFake, cursorPages, linkPages, offsetPages, readJson } from './http-fake.js';
export type {
  FakeFailure,
  FakeMeta,
  FakeResponse,
  HttpFakeOptions,
  ResponseValidator,
  RouteContext,
  RouteHandler,
} from './http-fake.js';
export { freePort, startRedis } from './redis.js';
export { callWithKey, connectLink, personServerEnv } from './people.js';
export { startOtlpReceiver, startRsyslog } from './witness-receivers.js';
export type { TestWitness } from './witness-receivers.js';
export { startTcpProxy } from './tcp-proxy.js';
export type { TcpProxy } from './tcp-proxy.js';
export type { TestRedis } from './redis.js';
export { checkGeneratedDocs, runConformance, runOnOldNode } from './repo-tools.js';
export { eventually, resultText } from './results.js';
export { REDIRECT_STATUSES, redirectMatrix, roadName, travel } from './roads.js';
export type { RedirectProblem, RedirectingFake, Road, RoadAnswer } from './roads.js';
export { TIME_SCALE, scaled } from './time.js';
export type { ServerUpstream, UpstreamModule } from './upstream.js';
export type { ConformanceRun } from './repo-tools.js';
