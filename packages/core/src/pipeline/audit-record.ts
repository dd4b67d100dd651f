/**
 * The one audit record of an attempt (tools/call, resources/read, prompts/get), built once its
 * outcome is known: who, from where, which protocol, what was asked (shape and hash, never the
 * content), what came back (size, items, hash), the policy decision, sanitiser flags, the error.
 */
import { sha256, sha256Canonical } from '@gatehouse/audit';
import type { AuditEntry, OutcomeReason } from '@gatehouse/audit';
import { argsShape, callerText, redactArgs } from '../audit.js';
import { UpstreamError } from '../errors.js';
import type { Decision } from '../policy.js';
import type { UpstreamCredential } from '../identity/mode.js';
import type { EffectiveUser } from '../define.js';
import type { Principal } from '../principal.js';
import type { SanitizeFlag } from '../sanitize.js';
import type { PreparedTool } from './prepare.js';

export type Action =
  'tools/call' | 'resources/read' | 'resources/list' | 'prompts/get' | 'completion/complete';

/** What the record says about the request itself, known when it arrives. */
export interface RecordSubject {
  readonly action: Action;
  readonly name: string;
  readonly eventId: string;
  readonly startedAt: string;
  readonly startedNs: bigint;
  readonly args?: unknown;
  readonly tool?: PreparedTool | undefined;
  /** The values of the tool's bound parameters (ToolDefinition `bound`): kept as hashes only. */
  readonly bound?: Readonly<Record<string, string>> | undefined;
  /** The credential the call acted with upstream, if the handler asked for one. */
  readonly credential?: UpstreamCredential | undefined;
  /** The target the handler resolved (`actsOn`); it names the call's target over a declared one. */
  readonly target?: string | undefined;
  /** Who the handler said the call acted as (`actsAs`), when no upstream credential says it. */
  readonly effective?: EffectiveUser | undefined;
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
function summarize(result: unknown, truncated: boolean): NonNullable<AuditEntry['result']> {
  const r = result as {
    content?: unknown[];
    contents?: unknown[];
    resources?: unknown[];
    messages?: unknown[];
    completion?: { values?: unknown[] };
    resultType?: string;
  };
  const json = JSON.stringify(result);
  return {
    bytes: Buffer.byteLength(json),
    ...(r.resultType === 'input_required' ? { input_required: true } : {}),
    items: (r.content ?? r.contents ?? r.resources ?? r.messages ?? r.completion?.values ?? [])
      .length,
    sha256: sha256(json),
    ...(truncated ? { truncated: true } : {}),
  };
}

function clientOf(info: RecordCaller['clientInfo']): Pick<AuditEntry, 'client'> {
  if (info === undefined || info === null || typeof info !== 'object') return {};
  return {
    client: {
      ...(info.name === undefined ? {} : { name: callerText(info.name, 128) }),
      ...(info.version === undefined ? {} : { version: callerText(info.version, 64) }),
    },
  };
}

function errorOf(err: unknown): Pick<AuditEntry, 'error' | 'upstream'> | undefined {
  if (err === undefined) return undefined;
  const message =
    err instanceof UpstreamError
      ? err.toolMessage()
      : err instanceof Error
        ? err.message
        : JSON.stringify(err);
  return {
    error: {
      message: callerText(message, 1024),
      type: err instanceof Error ? err.name : typeof err,
    },
    ...(err instanceof UpstreamError
      ? {
          upstream: {
            ...(err.requestId === undefined ? {} : { request_id: err.requestId }),
            ...(err.retryAfterSeconds === undefined
              ? {}
              : { retry_after_s: err.retryAfterSeconds }),
            status: err.status,
          },
        }
      : {}),
  };
}

/** Which credential a call used upstream, as the record names it. */
function upstreamKind(credential: UpstreamCredential): 'service' | 'user' | 'service_fallback' {
  if (credential.kind === 'user') return 'user';
  return credential.fallback === true ? 'service_fallback' : 'service';
}

/** When the attempt ended (the record may be built a little later, after the answer). */
export interface RecordEnd {
  readonly ns: bigint;
  readonly ms: number;
}

export const endNow = (): RecordEnd => ({ ns: process.hrtime.bigint(), ms: Date.now() });

export function buildAuditRecord(
  subject: RecordSubject,
  caller: RecordCaller,
  reason: OutcomeReason,
  outcome: RecordOutcome,
  end: RecordEnd = endNow(),
): AuditEntry {
  const tool = subject.tool;
  const types: AuditEntry['event']['type'] = [
    tool?.definition.access === 'write' ? 'change' : 'access',
  ];
  if (reason === 'denied' || reason === 'audit_unavailable') types.push('denied');
  else if (reason !== 'ok') types.push('error');
  const { principal } = caller;
  const { credential } = subject;
  const target = subject.target ?? outcome.target;
  // Members in canonical (sorted) key order at every level: the audit writer then serialises
  // the record without copying anything (canonicalJson copies only objects out of order).
  const err = errorOf(outcome.error);
  return {
    '@timestamp': new Date(end.ms).toISOString(),
    ...(subject.args === undefined
      ? {}
      : {
          args: {
            // The caller's values, never the values: a hash an investigator can match.
            ...(subject.bound === undefined
              ? {}
              : {
                  bound: Object.fromEntries(
                    Object.entries(subject.bound)
                      .sort(([a], [b]) => (a < b ? -1 : 1))
                      .map(([name, value]) => [name, sha256(value)]),
                  ),
                }),
            ...(tool?.definition.auditArgs === 'redacted'
              ? { redacted: redactArgs(subject.args) }
              : {}),
            sha256: sha256Canonical(subject.args),
            shape: argsShape(subject.args),
          },
        }),
    auth: {
      ...(principal.credentialId === undefined
        ? {}
        : { credential_id: callerText(principal.credentialId, 256) }),
      method: principal.authMethod,
      ...(credential === undefined ? {} : { upstream: upstreamKind(credential) }),
    },
    ...clientOf(caller.clientInfo),
    ...(err === undefined ? {} : { error: err.error }),
    event: {
      action: subject.action,
      category: ['api'],
      duration: Number(end.ns - subject.startedNs),
      id: subject.eventId,
      kind: 'event',
      outcome: reason === 'ok' ? 'success' : 'failure',
      reason,
      start: subject.startedAt,
      type: types,
    },
    mcp: {
      era: caller.era,
      name: callerText(subject.name, 512),
      ...(caller.protocolVersion === undefined
        ? {}
        : { protocol_version: callerText(caller.protocolVersion, 64) }),
      request_id:
        typeof caller.requestId === 'number' ? caller.requestId : callerText(caller.requestId, 128),
      transport: caller.transport,
    },
    ...(outcome.decision === undefined
      ? {}
      : {
          policy: {
            decision: outcome.decision.allow ? 'allow' : 'deny',
            rule: outcome.decision.rule,
          },
        }),
    ...(outcome.result === undefined
      ? {}
      : { result: summarize(outcome.result, outcome.flags?.has('truncated') === true) }),
    ...(outcome.flags && outcome.flags.size > 0
      ? { sanitizer: { flags: [...outcome.flags].sort() } }
      : {}),
    ...(typeof caller.sourceIp === 'string' ? { source: { ip: caller.sourceIp } } : {}),
    ...(target === undefined ? {} : { target: { resource: callerText(target, 1024) } }),
    ...(tool === undefined
      ? {}
      : {
          tool: {
            access: tool.definition.access,
            definition_hash: tool.hash,
            name: tool.definition.name,
            read_only: tool.definition.annotations.readOnlyHint,
          },
        }),
    ...(err?.upstream === undefined ? {} : { upstream: err.upstream }),
    user: {
      ...(credential?.kind === 'user'
        ? {
            effective: {
              domain: credential.owner.upstream,
              id: callerText(credential.grant.account.id, 256),
              name: callerText(credential.grant.account.login, 256),
            },
          }
        : subject.effective === undefined
          ? {}
          : {
              effective: {
                domain: callerText(subject.effective.domain, 256),
                id: callerText(subject.effective.id, 256),
                name: callerText(subject.effective.name, 256),
              },
            }),
      id: callerText(principal.id, 256),
    },
    ...(caller.userAgent ? { user_agent: { original: callerText(caller.userAgent, 512) } } : {}),
  };
}
