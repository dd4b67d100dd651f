/**
 * The one audit record of an attempt (tools/call, resources/read, prompts/get), built once its
 * outcome is known: who, from where, which protocol, what was asked (shape and hash, never the
 * content), what came back (size, items, hash), the policy decision, sanitiser flags, the error.
 */
import { sha256, sha256Canonical } from '@gatehouse/audit';
import type { AuditEntry, OutcomeReason } from '@gatehouse/audit';
import { argsShape, auditMessage, redactArgs } from '../audit.js';
import { UpstreamError } from '../errors.js';
import type { Decision } from '../policy.js';
import type { Principal } from '../principal.js';
import { sanitizeText } from '../sanitize.js';
import type { SanitizeFlag } from '../sanitize.js';
import type { PreparedTool } from './prepare.js';

export type Action = 'tools/call' | 'resources/read' | 'prompts/get';

/** What the record says about the request itself, known when it arrives. */
export interface RecordSubject {
  readonly action: Action;
  readonly name: string;
  readonly eventId: string;
  readonly startedAt: string;
  readonly startedNs: bigint;
  readonly args?: unknown;
  readonly tool?: PreparedTool | undefined;
}

/** Who asked and over what. */
export interface RecordCaller {
  readonly principal: Principal;
  readonly era: 'legacy' | 'modern';
  readonly transport: 'stdio' | 'http' | 'memory';
  readonly requestId: string | number;
  readonly clientInfo?: { name?: string; version?: string } | undefined;
  readonly protocolVersion?: string | undefined;
  readonly sourceIp?: unknown;
  readonly userAgent?: string | null | undefined;
}

/** What the outcome adds. */
export interface RecordOutcome {
  target?: string | undefined;
  decision?: Decision;
  flags?: ReadonlySet<SanitizeFlag>;
  error?: unknown;
  result?: unknown;
}

/**
 * What the audit keeps of a result: its size, item count and hash, never its content. The hash
 * is over the JSON the core built (deterministic for a result), not a canonical form: cheaper.
 */
function summarize(result: unknown): {
  bytes: number;
  items: number;
  sha256: string;
  input_required?: boolean;
} {
  const r = result as {
    content?: unknown[];
    contents?: unknown[];
    messages?: unknown[];
    resultType?: string;
  };
  const json = JSON.stringify(result);
  return {
    bytes: Buffer.byteLength(json),
    items: (r.content ?? r.contents ?? r.messages ?? []).length,
    sha256: sha256(json),
    ...(r.resultType === 'input_required' ? { input_required: true } : {}),
  };
}

function clientOf(info: RecordCaller['clientInfo']): Pick<AuditEntry, 'client'> {
  if (info === undefined) return {};
  return {
    client: {
      ...(info.name === undefined ? {} : { name: auditMessage(info.name).slice(0, 128) }),
      ...(info.version === undefined ? {} : { version: auditMessage(info.version).slice(0, 64) }),
    },
  };
}

function errorOf(err: unknown): Pick<AuditEntry, 'error' | 'upstream'> {
  if (err === undefined) return {};
  const message =
    err instanceof UpstreamError
      ? err.toolMessage()
      : err instanceof Error
        ? err.message
        : JSON.stringify(err);
  return {
    error: {
      type: err instanceof Error ? err.name : typeof err,
      message: auditMessage(sanitizeText(message).text),
    },
    ...(err instanceof UpstreamError
      ? {
          upstream: {
            status: err.status,
            ...(err.requestId === undefined ? {} : { request_id: err.requestId }),
            ...(err.retryAfterSeconds === undefined
              ? {}
              : { retry_after_s: err.retryAfterSeconds }),
          },
        }
      : {}),
  };
}

export function buildAuditRecord(
  subject: RecordSubject,
  caller: RecordCaller,
  reason: OutcomeReason,
  outcome: RecordOutcome,
): AuditEntry {
  const tool = subject.tool;
  const types: AuditEntry['event']['type'] = [
    tool?.definition.access === 'write' ? 'change' : 'access',
  ];
  if (reason === 'denied' || reason === 'audit_unavailable') types.push('denied');
  else if (reason !== 'ok') types.push('error');
  const { principal } = caller;
  return {
    '@timestamp': new Date().toISOString(),
    event: {
      id: subject.eventId,
      kind: 'event',
      category: ['api'],
      type: types,
      action: subject.action,
      outcome: reason === 'ok' ? 'success' : 'failure',
      reason,
      start: subject.startedAt,
      duration: Number(process.hrtime.bigint() - subject.startedNs),
    },
    user: { id: principal.id },
    auth: {
      method: principal.authMethod,
      ...(principal.credentialId === undefined ? {} : { credential_id: principal.credentialId }),
    },
    ...clientOf(caller.clientInfo),
    ...(typeof caller.sourceIp === 'string' ? { source: { ip: caller.sourceIp } } : {}),
    ...(caller.userAgent
      ? { user_agent: { original: auditMessage(caller.userAgent).slice(0, 512) } }
      : {}),
    mcp: {
      request_id: caller.requestId,
      ...(caller.protocolVersion === undefined ? {} : { protocol_version: caller.protocolVersion }),
      era: caller.era,
      transport: caller.transport,
      name: sanitizeText(subject.name).text.slice(0, 512),
    },
    ...(tool === undefined
      ? {}
      : {
          tool: {
            name: tool.definition.name,
            definition_hash: tool.hash,
            access: tool.definition.access,
            read_only: tool.definition.annotations.readOnlyHint,
          },
        }),
    ...(outcome.target === undefined
      ? {}
      : { target: { resource: sanitizeText(outcome.target).text } }),
    ...(subject.args === undefined
      ? {}
      : {
          args: {
            shape: argsShape(subject.args),
            sha256: sha256Canonical(subject.args),
            ...(tool?.definition.auditArgs === 'redacted'
              ? { redacted: redactArgs(subject.args) }
              : {}),
          },
        }),
    ...(outcome.result === undefined
      ? {}
      : {
          result: {
            ...summarize(outcome.result),
            ...(outcome.flags?.has('truncated') ? { truncated: true } : {}),
          },
        }),
    ...(outcome.decision === undefined
      ? {}
      : {
          policy: {
            decision: outcome.decision.allow ? 'allow' : 'deny',
            rule: outcome.decision.rule,
          },
        }),
    ...(outcome.flags && outcome.flags.size > 0
      ? { sanitizer: { flags: [...outcome.flags].sort() } }
      : {}),
    ...errorOf(outcome.error),
  };
}
