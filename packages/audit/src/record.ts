/**
 * The audit record (schema version 1). One JSON line per event; ECS-compatible names where ECS
 * has them, `mcp.*`, `tool.*`, `args.*`, `result.*`, `policy.*`, `sanitizer.*`, `upstream.*` and
 * `audit.*` for the rest. The JSON Schema in `schema.ts` is the contract; docs/audit.md explains
 * every field and the mapping to OCSF API Activity (6003).
 */

/** Bumped on any incompatible change of the record shape. */
export const AUDIT_SCHEMA_VERSION = '1.4.0';

/** Why an attempt ended the way it did. */
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
  | 'internal_error'
  | 'audit_unavailable';

/** The events the trail records. */
export type AuditAction =
  | 'tools/call'
  | 'resources/read'
  | 'resources/list'
  | 'prompts/get'
  | 'completion/complete'
  | 'gatehouse/start'
  | 'gatehouse/start_refused'
  | 'gatehouse/stop'
  | 'gatehouse/config_refused'
  | 'gatehouse/auth_failure'
  | 'gatehouse/security_override'
  | 'gatehouse/rate_limit_store'
  | 'gatehouse/connect'
  | 'audit/checkpoint';

/** Integrity fields, added by the writer. */
export interface AuditIntegrity {
  schema_version: string;
  /** Random id of the writing process's stream. */
  stream: string;
  /** Position in the chain; continues across restarts and rotated files of one log. */
  seq: number;
  /** `hash` of the previous record, or null for the first record of a chain. */
  prev_hash: string | null;
  /** `sha256:` + hex SHA-256 of (prev_hash ‖ "\n" ‖ canonical JSON of the record without `audit.hash`). */
  hash: string;
  /** On the first record after a restart: the record this chain continues from. */
  resumed?: { seq: number; hash: string; damaged_tail?: boolean };
  /** On a checkpoint record. */
  checkpoint?: AuditCheckpoint;
}

/** A checkpoint: a signature over the chain position it covers. */
export interface AuditCheckpoint {
  covers: { seq: number; hash: string };
  algorithm: 'ed25519' | 'none';
  key_id?: string;
  /** base64 Ed25519 signature over the canonical JSON of `{ stream, seq, hash, time }`. */
  signature?: string;
  time: string;
  /** Records written since the previous checkpoint (in this process). */
  records: number;
}

/** One audit record. Optional parts appear when they apply. */
export interface AuditRecord {
  '@timestamp': string;
  event: {
    id: string;
    kind: 'event';
    category: Array<'api' | 'authentication' | 'configuration' | 'process'>;
    type: Array<'access' | 'creation' | 'change' | 'denied' | 'error' | 'info' | 'start' | 'end'>;
    action: AuditAction;
    outcome: 'success' | 'failure' | 'unknown';
    reason:
      | OutcomeReason
      | 'started'
      | 'stopped'
      | 'checkpoint'
      | 'config_invalid'
      | 'start_refused'
      | 'auth_failed'
      | 'security_override'
      | 'store_unavailable'
      | 'store_available'
      | 'linked'
      | 'link_refused';
    start?: string;
    /** Nanoseconds. */
    duration?: number;
  };
  service: { name: string; version: string };
  host: { hostname: string };
  process: { pid: number };
  /**
   * The principal; `effective`: the upstream account the call acted as, when it acted as a
   * person (ECS `user.effective`: the vendor's user id, login, and host).
   */
  user?: { id: string; effective?: { id: string; name: string; domain: string } };
  /**
   * How the caller authenticated; `upstream`: which credential the call used at the vendor —
   * `service` (the configured one), `user` (the person's own), `service_fallback` (the
   * configured one in user mode: a read the operator let fall back).
   */
  auth?: {
    method: string;
    credential_id?: string;
    upstream?: 'service' | 'user' | 'service_fallback';
  };
  client?: { name?: string; version?: string };
  source?: { ip: string };
  user_agent?: { original: string };
  mcp?: {
    request_id?: string | number;
    protocol_version?: string;
    era?: 'legacy' | 'modern';
    transport?: 'stdio' | 'http' | 'memory';
    /** Tool name, resource URI or prompt name. */
    name?: string;
  };
  tool?: { name: string; definition_hash: string; access: 'read' | 'write'; read_only: boolean };
  target?: { resource: string };
  args?: {
    shape: unknown;
    sha256: string;
    redacted?: unknown;
    /** SHA-256 of each value a bound parameter took from the caller (never the value). */
    bound?: Record<string, string>;
  };
  result?: {
    bytes: number;
    items: number;
    sha256: string;
    truncated?: boolean;
    input_required?: boolean;
  };
  policy?: { decision: 'allow' | 'deny'; rule: string };
  sanitizer?: { flags: string[] };
  error?: { type: string; message: string };
  upstream?: { status: number; request_id?: string; retries?: number; retry_after_s?: number };
  /** Lifecycle details (start: effective config and tool hashes; stop: counts; refusal: problems). */
  gatehouse?: Record<string, unknown>;
  audit: AuditIntegrity;
}

/** A record before the writer adds the integrity fields. */
export type AuditEntry = Omit<AuditRecord, 'audit' | 'host' | 'process' | 'service'> &
  Partial<Pick<AuditRecord, 'service'>>;
