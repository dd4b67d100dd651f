/**
 * One SDK `Server` (a stdio connection, or one HTTP request): the caller, their era, and the
 * pieces every handler shares: the policy as it applies to this caller, the per-call context a
 * handler receives, and the attempt that ends in exactly one audit record.
 */
import { randomBytes, randomUUID } from 'node:crypto';
import type { OutcomeReason } from '@gatehouse/audit';
import {
  CLIENT_INFO_META_KEY,
  PROTOCOL_VERSION_META_KEY,
  createRequestStateCodec,
} from '@modelcontextprotocol/server';
import type { Server, ServerContext } from '@modelcontextprotocol/server';
import type { EffectiveUser, RequestContext, ToolDefinition } from '../define.js';
import type { Logger } from '../logger.js';
import { credentialFor } from '../identity/mode.js';
import type { UpstreamCredential } from '../identity/mode.js';
import type { Decision } from '../policy.js';
import type { Principal } from '../principal.js';
import { frameUntrusted } from '../sanitize.js';
import { RequestTrace } from '../tracing.js';
import { buildAuditRecord, endNow } from './audit-record.js';
import type { Action, RecordCaller, RecordOutcome, RecordSubject } from './audit-record.js';
import { Refusal, classifyFailure } from './failures.js';
import type { Failure } from './failures.js';
import type { PreparedServer, PreparedTool } from './prepare.js';
import type { Runtime } from './runtime-type.js';

export type StateCodec = ReturnType<typeof createRequestStateCodec>;

/** The request-state codec of a process: HMAC-sealed, bound to the method and the caller. */
export function createStateCodec(runtime: Runtime): StateCodec {
  return createRequestStateCodec({
    key: runtime.stateKey ?? randomBytes(32),
    ttlSeconds: 600,
    // State minted for one method and caller is refused for any other.
    bind: (ctx) => `${ctx.mcpReq.method}\0${ctx.http?.authInfo?.clientId ?? ''}`,
  });
}

export class Connection {
  constructor(
    readonly server: Server,
    readonly prepared: PreparedServer,
    readonly runtime: Runtime,
    readonly stateCodec: StateCodec,
    readonly principal: Principal,
    readonly era: 'legacy' | 'modern',
  ) {}

  /** Listed exactly when callable. */
  visible(tool: PreparedTool): Decision {
    return this.runtime.policy.toolVisible(tool.definition, this.principal);
  }

  /** Resources, templates and prompts: listed exactly when they may be read, got, completed. */
  granted(item: { scope?: string | undefined }): Decision {
    return this.runtime.policy.scopeAllowed(
      item.scope ?? this.prepared.defaultScope,
      this.principal,
    );
  }

  readonly allows = (target: string): boolean => this.runtime.policy.targetAllowed(target).allow;

  /** Throws the refusal of a target outside the allow-list (declared, or resolved by a handler). */
  checkTarget(target: string): void {
    const allowed = this.runtime.policy.targetAllowed(target);
    if (!allowed.allow) {
      throw new Refusal('denied', `Denied: ${allowed.reason}. Pick an allowed target.`, allowed);
    }
  }

  /** The upstream credential of `attempt`'s call (of `tool`, if a tool), noted for its record. */
  async credential(
    attempt: Attempt,
    tool?: Pick<ToolDefinition, 'name' | 'access'>,
  ): Promise<UpstreamCredential> {
    return (attempt.credential = await credentialFor(
      this.prepared.definition.identity,
      this.principal,
      tool,
    ));
  }

  /**
   * Starts the attempt of a request. `label` is what metrics and spans name it by: the
   * registered name it resolved to, or `unknown` — never the caller's spelling (a closed set).
   */
  begin(sctx: ServerContext, action: Action, name: string, label: string, args?: unknown): Attempt {
    return new Attempt(this, sctx, action, name, label, args);
  }

  abortSources(sctx: ServerContext): { cancel: AbortSignal; shutdown?: AbortSignal | undefined } {
    return { cancel: sctx.mcpReq.signal, shutdown: this.runtime.inflight?.signal };
  }

  /** The context a handler receives. */
  contextFor(
    /** The call: its request, its event id, and where the credential it used is noted. */
    attempt: Attempt,
    signal: AbortSignal,
    deadline = Date.now() + this.runtime.toolTimeoutMs,
    /** The tool called, if a tool: a read the operator named may use the service credential. */
    tool?: Pick<ToolDefinition, 'name' | 'access'>,
  ): RequestContext {
    const { logger, transport } = this.runtime;
    const { sctx, eventId } = attempt;
    const era = this.era;
    let child: Logger | undefined;
    let nonce: string | undefined; // one per call, made on first use
    return {
      principal: this.principal,
      signal,
      deadline,
      allows: this.allows,
      untrusted: (content, source) =>
        frameUntrusted(content, source, (nonce ??= randomBytes(6).toString('hex'))),
      untrustedValue: (content) => {
        if (content === '') return content;
        const tag = `untrusted-data-${(nonce ??= randomBytes(6).toString('hex'))}`;
        return `<${tag}>${content}</${tag}>`;
      },
      // Created on first use: most calls never log, and a child logger is not free.
      get logger() {
        return (child ??= logger.child({ eventId }));
      },
      eventId,
      era,
      canRequestClient: era === 'legacy' && transport !== 'http',
      mcp: sctx,
      sealState: (payload) => this.stateCodec.mint(payload, sctx),
      credential: () => this.credential(attempt, tool),
      requestState: <T>() => sctx.mcpReq.requestState<T>(),
      actsOn: (target) => {
        attempt.target = target;
        this.checkTarget(target);
      },
      actsAs: (effective) => {
        attempt.effective = effective;
      },
    };
  }

  /** Who asked, for the audit record. */
  caller(sctx: ServerContext): RecordCaller {
    const envelope = sctx.mcpReq.envelope as Record<string, unknown> | undefined;
    const modern = this.era === 'modern';
    return {
      principal: this.principal,
      era: this.era,
      transport: this.runtime.transport,
      requestId: sctx.mcpReq.id,
      clientInfo: modern
        ? (envelope?.[CLIENT_INFO_META_KEY] as { name?: string; version?: string } | undefined)
        : this.server.getClientVersion(),
      protocolVersion: modern
        ? (envelope?.[PROTOCOL_VERSION_META_KEY] as string | undefined)
        : this.server.getNegotiatedProtocolVersion(),
      sourceIp: (sctx.http?.authInfo?.extra as { sourceIp?: unknown } | undefined)?.sourceIp,
      userAgent: sctx.http?.req?.headers.get('user-agent'),
    };
  }
}

/** One tools/call, resources/read, prompts/get or completion/complete: exactly one audit record. */
export class Attempt implements RecordSubject {
  readonly eventId = randomUUID();
  readonly startedAt = new Date().toISOString();
  readonly startedNs = process.hrtime.bigint();
  tool: PreparedTool | undefined;
  /** The credential the handler acted with upstream, once it asked (ADR 0026). */
  credential: UpstreamCredential | undefined;
  /** What the handler resolved the call to act on (`actsOn`): the record's target. */
  target: string | undefined;
  /** Who the handler said the call acted as (`actsAs`), when no upstream credential says it. */
  effective: EffectiveUser | undefined;
  /** The caller's values of the tool's bound parameters, once resolved (hashed in the record). */
  bound: Readonly<Record<string, string>> | undefined;
  /** The request span and its stage spans (no-ops unless tracing is on). */
  readonly trace: RequestTrace;

  constructor(
    private readonly connection: Connection,
    readonly sctx: ServerContext,
    readonly action: Action,
    readonly name: string,
    /** The registered name (or `unknown`): the only name metrics and spans carry. */
    readonly label: string,
    readonly args?: unknown,
  ) {
    this.trace = RequestTrace.start({
      method: action,
      target: label,
      ...(action === 'tools/call' ? { tool: label } : {}),
      requestId: sctx.mcpReq.id,
      transport: sctx.http === undefined ? connection.runtime.transport : 'http',
      meta: sctx.mcpReq._meta,
      headers: sctx.http?.req?.headers,
    });
    this.trace.stage('validate');
  }

  /**
   * Ends the attempt with a failure, classified by the one table (failures.ts): the record gets
   * the reason, the error, a denial's decision and (tools/call) the tool error. Returns the
   * classification: `toolResult` to answer a tool call with, `protocolError` for the others.
   */
  fail(error: unknown, outcome: RecordOutcome = {}): Failure {
    const { eventId, action: method, name } = this;
    const failure = classifyFailure(error, {
      method,
      name,
      eventId,
      logger: this.connection.runtime.logger,
    });
    // A refusal's rule and text are in the decision; only a call that did not parse keeps why.
    const recorded = !(error instanceof Refusal) || error.kind === 'invalid_params';
    this.finish(failure.reason, {
      ...outcome,
      ...(recorded ? { error } : {}),
      ...(failure.decision === undefined ? {} : { decision: failure.decision }),
      ...(failure.toolResult === undefined ? {} : { result: failure.toolResult }),
    });
    return failure;
  }

  /**
   * Writes the attempt's audit record: before the answer for a write tool, right after it for a
   * read when the runtime says so (ADR 0014). A failing sink is logged; the sinks track it.
   */
  finish(reason: OutcomeReason, outcome: RecordOutcome = {}): void {
    const { audit, logger, metrics, auditReadsAfterAnswer } = this.connection.runtime;
    this.trace.stage('audit');
    const caller = this.connection.caller(this.sctx);
    const end = endNow();
    const failed = (writeError: unknown): undefined => {
      logger.error({ err: writeError, eventId: this.eventId }, 'audit trail failed');
      return undefined;
    };
    const build = () => {
      try {
        return buildAuditRecord(this, caller, reason, outcome, end);
      } catch (error) {
        return failed(error);
      }
    };
    try {
      if (auditReadsAfterAnswer && audit.defer && this.tool?.definition.access !== 'write') {
        audit.defer(build);
      } else {
        const entry = build();
        if (entry !== undefined) audit.append(entry);
      }
    } catch (writeError) {
      failed(writeError);
    }
    this.trace.end(reason, reason !== 'ok', caller.protocolVersion);
    if (metrics !== undefined) {
      const seconds = Number(process.hrtime.bigint() - this.startedNs) / 1e9;
      metrics.operation(
        this.action,
        this.action === 'tools/call' ? this.label : '',
        reason,
        seconds,
      );
      if (reason === 'rate_limited') metrics.rateLimited(outcome.decision?.rule ?? 'rate');
    }
  }
}
