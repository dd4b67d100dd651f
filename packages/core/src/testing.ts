/**
 * `@gatehouse/core/testing`: a server's test harness. It wires a definition the way `runServer`
 * does — the config's policy, limits and confirmation, a real audit trail — with the log and the
 * audit records captured in memory. Connect a real client to `factory(definition)` with
 * `connectInMemory` of `@gatehouse/testkit`.
 */
import { Writable } from 'node:stream';
import { memoryAudit } from '@gatehouse/audit';
import type { AuditRecord } from '@gatehouse/audit';
import type { McpServerFactory } from '@modelcontextprotocol/server';
import type { BaseConfig } from './config.js';
import type { ServerDefinition } from './define.js';
import { createLogger } from './logger.js';
import type { Logger } from './logger.js';
import type { Runtime } from './pipeline/runtime-type.js';
import { createRuntime } from './run.js';
import { createServerFactory } from './server.js';

/** What {@link createTestHarness} returns. */
export interface TestHarness {
  /** The logger to give the definition (debug level, captured). */
  readonly logger: Logger;
  /** The audit records written so far (checkpoints left out). */
  readonly records: AuditRecord[];
  /** Everything logged so far, as pino JSON lines. */
  readonly logs: () => string;
  /** The server factory of a definition, under the config's runtime (override parts of it). */
  readonly factory: (
    definition: ServerDefinition,
    overrides?: Partial<Runtime>,
  ) => McpServerFactory;
}

/** A debug-level logger whose lines are kept in memory. */
export function captureLogger(): { readonly logger: Logger; readonly logs: () => string } {
  let text = '';
  const logger = createLogger({
    level: 'debug',
    destination: new Writable({
      write(chunk: Buffer, _encoding, done) {
        text += chunk.toString();
        done();
      },
    }),
  });
  return { logger, logs: () => text };
}

export function createTestHarness(
  config: BaseConfig,
  service = { name: 'test', version: '1' },
): TestHarness {
  const { logger, logs } = captureLogger();
  const { audit, records } = memoryAudit(service);
  return {
    logger,
    records,
    logs,
    factory: (definition, overrides = {}) =>
      createServerFactory(definition, {
        ...createRuntime(config, logger, { audit }),
        ...overrides,
      }),
  };
}
