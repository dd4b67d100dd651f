import { randomUUID } from 'node:crypto';
import {
  AuditFileBusyError,
  AuditLog,
  fdSink,
  fileSink,
  findChainEnd,
  loadSigner,
  withoutUnsafe,
} from '@gatehouse/audit';
import type { AuditAction, AuditEntry, CheckpointWitness, LineSink } from '@gatehouse/audit';
import type { BaseConfig } from './config.js';
import { ConfigError } from './errors.js';
import type { Logger } from './logger.js';
import type { ConnectOutcome } from './identity/connect.js';
import type { Principal } from './principal.js';
import { sanitizeText } from './sanitize.js';
import { scrubSecrets } from './secrets.js';
import { otlpWitness, syslogWitness } from './witness-delivery.js';

/**
 * The pipeline's side of the audit trail (docs/audit.md, ADR 0005): what a record says about a
 * call is decided here; integrity (seq, hashes, signed checkpoints) and the sinks live in
 * `@gatehouse/audit`.
 */

/** Where the pipeline writes records: an `AuditLog`, or anything with the same two members. */
export interface AuditWriter {
  append(entry: AuditEntry): unknown;
  /**
   * Writes a record once the current answer has gone out (end of the event-loop turn, or before
   * anything else is written). Writers without it get every record through `append`.
   */
  defer?(build: () => AuditEntry | undefined): void;
  /** Sinks whose last write failed (empty when healthy). */
  readonly failures: ReadonlyMap<string, Error>;
}

/** What happens to calls while a sink cannot be written. */
export type AuditFailureMode = 'refuse_writes' | 'refuse_all' | 'continue';

const MAX_DEPTH = 6;
const MAX_KEYS = 64;
const MAX_STRING = 1_000;

/**
 * The shape of arguments without their values: `{ project: 'string', labels: ['string'] }`.
 * Shows what the model sent without putting read queries or identifiers in the log.
 */
export function argsShape(value: unknown, depth = 0): unknown {
  if (value === null) return 'null';
  if (Array.isArray(value))
    return value.length === 0 ? [] : [depth >= MAX_DEPTH ? '…' : argsShape(value[0], depth + 1)];
  if (typeof value === 'object') {
    if (depth >= MAX_DEPTH) return 'object';
    const keys = Object.keys(value).sort().slice(0, MAX_KEYS);
    return Object.fromEntries(
      keys.map((k) => [k, argsShape((value as Record<string, unknown>)[k], depth + 1)]),
    );
  }
  return typeof value;
}

/**
 * The redacted view of arguments, for tools whose definition asks for it (write tools: what was
 * posted or created is evidence): secrets scrubbed, long strings cut with an honest marker.
 */
export function redactArgs(value: unknown, depth = 0): unknown {
  if (typeof value === 'string') {
    const { text } = scrubSecrets(value);
    return text.length > MAX_STRING
      ? `${text.slice(0, MAX_STRING)}…[${text.length - MAX_STRING} more characters]`
      : text;
  }
  if (Array.isArray(value))
    return depth >= MAX_DEPTH ? '…' : value.slice(0, MAX_KEYS).map((v) => redactArgs(v, depth + 1));
  if (value !== null && typeof value === 'object') {
    if (depth >= MAX_DEPTH) return '…';
    return Object.fromEntries(
      Object.entries(value)
        .slice(0, MAX_KEYS)
        .map(([k, v]) => [k, redactArgs(v, depth + 1)]),
    );
  }
  return value;
}

/**
 * A value the caller chose (a client name, a user agent, a URI, a token's subject, a name), as
 * the record keeps it: secrets scrubbed, sanitised, every control, bidi and line-separator
 * character removed (the set `gatehouse-audit` neutralises when printing), capped. Whatever the type it arrived as, the record holds a string.
 */
export function callerText(value: unknown, max: number): string {
  const text = typeof value === 'string' ? value : (JSON.stringify(value) ?? '');
  return withoutUnsafe(sanitizeText(text).text).slice(0, max);
}

/** A safe error message for a record: secrets scrubbed, bounded. */
export function auditMessage(message: string): string {
  return scrubSecrets(message).text.slice(0, 1024);
}

/** The audit writer's last word on every string of a record: no secret is written. */
export function scrubRecordText(text: string): string {
  return scrubSecrets(text).text;
}

/** The configured audit sinks, or the transport's default (stderr on stdio, stdout on HTTP). */
export function auditSinkNames(config: BaseConfig): readonly ('stderr' | 'stdout' | 'file')[] {
  return config.GATEHOUSE_AUDIT_SINKS.length > 0
    ? config.GATEHOUSE_AUDIT_SINKS
    : [config.GATEHOUSE_TRANSPORT === 'stdio' ? 'stderr' : 'stdout'];
}

export function auditSinks(config: BaseConfig): LineSink[] {
  return auditSinkNames(config).map((name) => {
    if (name === 'stderr') return fdSink(2, 'stderr');
    if (name === 'stdout') return fdSink(1, 'stdout');
    return fileSink({
      path: config.GATEHOUSE_AUDIT_FILE!,
      maxBytes: config.GATEHOUSE_AUDIT_ROTATE_BYTES,
      daily: config.GATEHOUSE_AUDIT_ROTATE_DAILY,
    });
  });
}

/**
 * Opens the process's audit log from the configuration: sinks, signing key, checkpoint interval,
 * and — with a file sink — the chain position to continue from.
 */
export function openAuditLog(
  config: BaseConfig,
  service: { name: string; version: string },
  witnesses: readonly CheckpointWitness[] = [],
): AuditLog {
  const resume =
    config.GATEHOUSE_AUDIT_FILE === undefined
      ? undefined
      : findChainEnd(config.GATEHOUSE_AUDIT_FILE);
  let sinks: LineSink[];
  try {
    sinks = auditSinks(config);
  } catch (error) {
    // Another process writes this file: the operator must give each server its own.
    if (error instanceof AuditFileBusyError) {
      throw new ConfigError([`GATEHOUSE_AUDIT_FILE: ${error.message}`]);
    }
    throw error;
  }
  return new AuditLog({
    sinks,
    service,
    scrub: scrubRecordText,
    checkpointEvery: config.GATEHOUSE_AUDIT_CHECKPOINT_EVERY,
    witnesses,
    ...(config.GATEHOUSE_AUDIT_SIGNING_KEY === undefined
      ? {}
      : { signer: loadSigner(config.GATEHOUSE_AUDIT_SIGNING_KEY, config.GATEHOUSE_AUDIT_KEY_ID) }),
    ...(resume === undefined ? {} : { resume }),
  });
}

/** The witnesses the configuration names (GATEHOUSE_AUDIT_WITNESS_*), for openAuditLog. */
export async function openWitnesses(
  config: BaseConfig,
  service: { name: string; version: string },
  logger: Logger,
): Promise<CheckpointWitness[]> {
  const witnesses: CheckpointWitness[] = [];
  if (config.GATEHOUSE_AUDIT_WITNESS_SYSLOG !== undefined) {
    witnesses.push(
      syslogWitness(new URL(config.GATEHOUSE_AUDIT_WITNESS_SYSLOG), {
        appName: service.name,
        logger,
      }),
    );
  }
  if (config.GATEHOUSE_AUDIT_WITNESS_OTLP !== undefined) {
    witnesses.push(
      await otlpWitness(new URL(config.GATEHOUSE_AUDIT_WITNESS_OTLP), {
        serviceName: service.name,
        serviceVersion: service.version,
        logger,
      }),
    );
  }
  return witnesses;
}

type LifecycleAction =
  | 'gatehouse/start'
  | 'gatehouse/stop'
  | 'gatehouse/config_refused'
  | 'gatehouse/start_refused'
  | 'gatehouse/auth_failure'
  | 'gatehouse/security_override'
  | 'gatehouse/rate_limit_store'
  | 'gatehouse/connect';

type EventFields = Pick<AuditEntry['event'], 'category' | 'type' | 'reason' | 'outcome'>;

function lifecycleEvent(action: LifecycleAction, failed: boolean): EventFields {
  switch (action) {
    case 'gatehouse/start':
      return { category: ['process'], type: ['start'], reason: 'started', outcome: 'success' };
    case 'gatehouse/stop':
      return failed
        ? {
            category: ['process'],
            type: ['end', 'error'],
            reason: 'internal_error',
            outcome: 'failure',
          }
        : { category: ['process'], type: ['end'], reason: 'stopped', outcome: 'success' };
    case 'gatehouse/config_refused':
      return {
        category: ['configuration'],
        type: ['error'],
        reason: 'config_invalid',
        outcome: 'failure',
      };
    case 'gatehouse/start_refused':
      return {
        category: ['process'],
        type: ['start', 'error'],
        reason: 'start_refused',
        outcome: 'failure',
      };
    case 'gatehouse/auth_failure':
      return {
        category: ['authentication'],
        type: ['denied'],
        reason: 'auth_failed',
        outcome: 'failure',
      };
    case 'gatehouse/security_override':
      return {
        category: ['configuration'],
        type: ['change'],
        reason: 'security_override',
        outcome: 'success',
      };
    case 'gatehouse/connect':
      return failed
        ? {
            category: ['authentication'],
            type: ['denied'],
            reason: 'link_refused',
            outcome: 'failure',
          }
        : {
            category: ['authentication'],
            type: ['creation'],
            reason: 'linked',
            outcome: 'success',
          };
    case 'gatehouse/rate_limit_store':
      return failed
        ? {
            category: ['process'],
            type: ['error'],
            reason: 'store_unavailable',
            outcome: 'failure',
          }
        : {
            category: ['process'],
            type: ['change'],
            reason: 'store_available',
            outcome: 'success',
          };
  }
}

/**
 * A lifecycle record: start (effective config, tool hashes), stop, configuration refused,
 * authentication failure (written by the HTTP authentication of the guard), a safety check
 * overridden by configuration.
 */
export function lifecycleEntry(
  action: LifecycleAction,
  details: Record<string, unknown>,
  options: {
    outcome?: 'success' | 'failure';
    user?: string;
    authMethod?: string;
    sourceIp?: string;
  } = {},
): AuditEntry {
  return {
    '@timestamp': new Date().toISOString(),
    event: {
      id: randomUUID(),
      kind: 'event',
      action,
      ...lifecycleEvent(action, options.outcome === 'failure'),
    },
    ...(options.user === undefined ? {} : { user: { id: options.user } }),
    ...(options.authMethod === undefined ? {} : { auth: { method: options.authMethod } }),
    ...(options.sourceIp === undefined ? {} : { source: { ip: options.sourceIp } }),
    gatehouse: details,
  };
}

/**
 * The record of one visit to the `/connect` pages that linked a person's upstream account or
 * refused to (ADR 0026): whose link it was (when it could be opened), the account, why not —
 * never a token, a code or the link.
 */
export function connectEntry(outcome: ConnectOutcome, sourceIp: string | undefined): AuditEntry {
  const { owner, account } = outcome;
  const entry = lifecycleEntry(
    'gatehouse/connect',
    {
      step: outcome.step,
      ...(outcome.refused === undefined ? {} : { refused: outcome.refused }),
      ...(owner === undefined ? {} : { issuer: callerText(owner.issuer, 256) }),
      ...(outcome.elicitationId === undefined
        ? {}
        : { elicitation_id: callerText(outcome.elicitationId, 128) }),
    },
    {
      outcome: outcome.linked ? 'success' : 'failure',
      ...(owner === undefined
        ? {}
        : {
            user: callerText(owner.subject, 256),
            authMethod: owner.issuer === 'api-key' ? 'api_key' : 'oauth',
          }),
      ...(sourceIp === undefined ? {} : { sourceIp }),
    },
  );
  if (owner === undefined || account === undefined) return entry;
  const effective = {
    domain: owner.upstream,
    id: callerText(account.id, 256),
    name: callerText(account.login, 256),
  };
  return { ...entry, user: { effective, id: entry.user!.id } };
}

/**
 * The record of a request refused at the HTTP layer for a missing scope (403
 * insufficient_scope) — a tool call, a resource read, a prompt get, a completion: it never
 * reached the pipeline, so its record is written here.
 */
export function scopeDeniedEntry(
  principal: Principal,
  request: {
    method: Extract<
      AuditAction,
      'tools/call' | 'resources/read' | 'prompts/get' | 'completion/complete'
    >;
    name: string;
    tool?: { name: string; access: 'read' | 'write'; readOnly: boolean; hash: string };
  },
  scope: string,
  peer: { sourceIp: string | undefined; userAgent: string | undefined },
): AuditEntry {
  const now = new Date().toISOString();
  const { tool } = request;
  return {
    '@timestamp': now,
    event: {
      id: randomUUID(),
      kind: 'event',
      category: ['api'],
      type: [tool?.access === 'write' ? 'change' : 'access', 'denied'],
      action: request.method,
      outcome: 'failure',
      reason: 'denied',
      start: now,
      duration: 0,
    },
    user: { id: callerText(principal.id, 256) },
    auth: {
      method: principal.authMethod,
      ...(principal.credentialId === undefined
        ? {}
        : { credential_id: callerText(principal.credentialId, 256) }),
    },
    ...(peer.sourceIp === undefined ? {} : { source: { ip: peer.sourceIp } }),
    ...(peer.userAgent === undefined
      ? {}
      : { user_agent: { original: callerText(peer.userAgent, 512) } }),
    mcp: { transport: 'http', name: callerText(request.name, 512) },
    ...(tool === undefined
      ? {}
      : {
          tool: {
            name: tool.name,
            definition_hash: tool.hash,
            access: tool.access,
            read_only: tool.readOnly,
          },
        }),
    policy: { decision: 'deny', rule: 'scope' },
    error: { type: 'InsufficientScope', message: `the principal lacks the scope ${scope}` },
  };
}
