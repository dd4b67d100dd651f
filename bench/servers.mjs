// The two servers the benchmark compares: the same no-op tool on a bare SDK v2 McpServer and on
// the Gatehouse core (policy, validation, sanitiser and audit included).
import {
  READ_ONLY_ANNOTATIONS,
  baseConfigSchema,
  defineServer,
  defineTool,
  loadConfig,
} from '@gatehouse/core';
import { createLogger, createRuntime, createServerFactory } from '@gatehouse/core/runtime';
import { McpServer } from '@modelcontextprotocol/server';
import { openSync } from 'node:fs';
import { AuditLog, fdSink } from '@gatehouse/audit';
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
        annotations: READ_ONLY_ANNOTATIONS,
      },
      async () => ({ content: [{ type: 'text', text: 'ok' }] }),
    );
    return server;
  };
}

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

/** The median of a list of samples. */
export const median = (values) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)];

/** Limits high enough that a benchmark measures the pipeline, not the rate limiter's refusals. */
export const BENCH_ENV = {
  GATEHOUSE_RATE_READ_PER_MIN: '1000000',
  GATEHOUSE_MAX_CONCURRENT_PER_PRINCIPAL: '10000',
};

/** The audit log the benchmarks use: the real hash chain, written to /dev/null. */
export function devNullAudit() {
  const fd = openSync('/dev/null', 'a');
  return new AuditLog({
    sinks: [fdSink(fd, 'dev-null')],
    service: { name: 'core', version: '1.0.0' },
  });
}

/** The core factory with a real logger and audit trail (hash-chained, to /dev/null). */
export function coreFactory(audit = devNullAudit()) {
  const config = loadConfig(baseConfigSchema, BENCH_ENV);
  const logger = createLogger({ dest: '/dev/null' });
  return createServerFactory(coreDefinition, createRuntime(config, logger, { audit }));
}
