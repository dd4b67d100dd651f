import type { Logger } from './logger.js';

/** Why an attempt ended the way it did (DESIGN §4). */
export type OutcomeReason =
  | 'ok'
  | 'tool_error'
  | 'invalid_params'
  | 'not_found'
  | 'denied'
  | 'rate_limited'
  | 'timeout'
  | 'cancelled'
  | 'upstream_error'
  | 'internal_error';

/** The MCP methods that produce one audit record per attempt. */
export type AuditedAction = 'tools/call' | 'resources/read' | 'prompts/get';

/**
 * One audit record per attempt, ECS-compatible names. The foundation writes the fields every
 * record needs; the audit issue adds argument hashes, integrity fields and its own sinks.
 */
export interface AuditRecord {
  '@timestamp': string;
  event: {
    id: string;
    kind: 'event';
    action: AuditedAction;
    outcome: 'success' | 'failure';
    reason: OutcomeReason;
    /** Nanoseconds, as ECS wants. */
    duration: number;
  };
  service: { name: string; version: string };
  user: { id: string };
  gatehouse: {
    auth_method: string;
    era: 'legacy' | 'modern';
    transport: 'stdio' | 'http' | 'memory';
    /** Tool name, resource URI or prompt name. */
    name: string;
    /** SHA-256 of the tool definition the model saw. */
    definition_hash?: string;
    policy?: { decision: 'allow' | 'deny'; rule: string };
    sanitizer_flags?: string[];
  };
  client?: { name?: string; version?: string };
  target?: { resource: string };
  mcp?: { request_id: string | number; protocol_version?: string };
  error?: { type: string; message: string };
  upstream?: { status: number; request_id?: string };
}

/** Where audit records go. */
export interface AuditSink {
  write(record: AuditRecord): void;
}

/**
 * The foundation's sink: one `audit` log line per record on the server's logger (stderr).
 * Records are built field by field from secret-free values, so the sink skips the logger's
 * wildcard redaction, which would otherwise be the largest cost of a call.
 */
export function loggerAuditSink(logger: Logger): AuditSink {
  const audit = logger.child({ log: { logger: 'audit' } }, { redact: [] });
  return {
    write(record) {
      audit.info({ audit: record }, 'audit');
    },
  };
}
