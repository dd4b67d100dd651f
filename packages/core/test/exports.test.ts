import { describe, expect, it } from 'vitest';

// What each entry point of @gatehouse/core exports, by name: a change to a public surface is a
// visible diff here, and nothing is exported that no one outside the core uses (ADR 0018 —
// `/runtime` had 45 values, 28 of them used nowhere else).
const SURFACES: Record<string, string[]> = {
  '@gatehouse/core': [
    'ConfigError',
    'CredentialError',
    'EXIT',
    'PolicyError',
    'READ_ONLY_ANNOTATIONS',
    'ToolError',
    'UpstreamError',
    'baseConfigSchema',
    'baseConfigShape',
    'defineConfig',
    'definePrompt',
    'defineResource',
    'defineServer',
    'defineTool',
    'envBoolean',
    'envInt',
    'envList',
    'isRetryable',
    'loadConfig',
    'neutralizeMarkdown',
    'paginate',
    'runServer',
    'sanitizeDeep',
    'sanitizeText',
    'secret',
    'secretText',
    'traceUpstream',
    'upstreamUrl',
    'withRetry',
  ],
  '@gatehouse/core/saas': [
    'Pacer',
    'RequestTimeoutError',
    'TargetScope',
    'ambiguous',
    'boundedFetch',
    'checkCredential',
    'createUpstreamErrors',
    'dedupeKey',
    'mayWait',
    'postOnce',
    'retryAfterSeconds',
    'sleep',
    'startupBounds',
    'timedFetch',
    'waitingOutRateLimits',
    'writesEnabled',
  ],
  '@gatehouse/core/runtime': [
    'Metrics',
    'checkAtStart',
    'createAuthenticator',
    'createLogger',
    'createRuntime',
    'createServerFactory',
    'enableTracing',
    'isLoopbackHost',
    'lifecycleEntry',
    'memoryLimiter',
    'originAllowed',
    'plainHttpUpstreams',
    'redactArgs',
    'redactConfig',
    'registerSecretValues',
    'scrubRecordText',
    'scrubSecrets',
    'secretKeys',
    'startHttpServer',
  ],
  '@gatehouse/core/docs': [
    'configTable',
    'describeConfig',
    'describeTools',
    'surfaceSnapshot',
    'surfaceSnapshotOf',
    'toolTable',
  ],
  '@gatehouse/core/testing': ['captureLogger', 'createTestHarness'],
};

describe('the entry points of @gatehouse/core', () => {
  it.each(Object.entries(SURFACES))('%s exports exactly its list', async (entry, names) => {
    const module = (await import(entry)) as Record<string, unknown>;
    expect(Object.keys(module).sort()).toEqual(names);
  });
});
