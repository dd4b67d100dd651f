import { randomBytes, randomUUID } from 'node:crypto';
import { sha256, sha256Canonical } from '@gatehouse/audit';
import type { AuditEntry, OutcomeReason } from '@gatehouse/audit';
import {
  createRequestStateCodec,
  CLIENT_INFO_META_KEY,
  PROTOCOL_VERSION_META_KEY,
  ProtocolError,
  ProtocolErrorCode,
  ResourceNotFoundError,
  Server,
  UriTemplate,
  inputRequired,
  inputResponse,
  isInputRequiredResult,
} from '@modelcontextprotocol/server';
import type {
  CallToolResult,
  ClientCapabilities,
  ContentBlock,
  InputRequiredResult,
  McpRequestContext,
  ReadResourceResult,
  ServerCapabilities,
  ServerContext,
  Tool,
} from '@modelcontextprotocol/server';
import * as z from 'zod';
import { argsShape, auditMessage, redactArgs } from './audit.js';
import type { AuditFailureMode, AuditWriter } from './audit.js';
import type {
  PromptDefinition,
  RequestContext,
  ResourceBody,
  ServerDefinition,
  StaticResourceDefinition,
  StructuredToolResult,
  TemplateResourceDefinition,
  DryRunPreview,
  ToolContext,
  ToolDefinition,
} from './define.js';
import type { Limits } from './limits.js';
import { PolicyError, ToolError, UpstreamError } from './errors.js';
import type { Logger } from './logger.js';
import { paginate } from './pagination.js';
import { readScope, toolScope } from './policy.js';
import type { Decision, Policy } from './policy.js';
import type { ScopeNeed } from './http.js';
import type { Principal } from './principal.js';
import { frameUntrusted, sanitizeDeep, sanitizeText, truncateText } from './sanitize.js';
import type { SanitizeFlag } from './sanitize.js';

/** Everything the pipeline needs besides the definition; built once per process. */
export interface Runtime {
  readonly logger: Logger;
  readonly policy: Policy;
  readonly audit: AuditWriter;
  /** What happens to calls while the audit trail cannot be written (default refuse_writes). */
  readonly auditFailureMode?: AuditFailureMode;
  readonly transport: 'stdio' | 'http' | 'memory';
  /** Default tool deadline in milliseconds. */
  readonly toolTimeoutMs: number;
  /** The principal of a request, from the transport (authentication on HTTP, operator on stdio). */
  readonly principal: (ctx: McpRequestContext) => Principal;
  /** Page size of list results. */
  readonly pageSize?: number;
  /** Tracks in-flight calls so shutdown can drain them. */
  readonly inflight?: InflightTracker;
  /** HMAC key for request state; random per process when absent (single replica only). */
  readonly stateKey?: string;
  /** Rate, concurrency and in-flight limits; none when absent. */
  readonly limits?: Limits;
  /** Default size budget of a tool result or resource text, in bytes. */
  readonly maxOutputBytes?: number;
  /** Ask the user to confirm write calls, and what to do when the client cannot ask. */
  readonly confirmWrites?: { readonly fallback: 'refuse' | 'proceed' };
}

/** Counts in-flight calls and aborts them when a drain deadline passes. */
export class InflightTracker {
  #count = 0;
  #waiters: Array<() => void> = [];
  readonly #shutdown = new AbortController();

  /** Aborted when shutdown gives up on in-flight calls. */
  get signal(): AbortSignal {
    return this.#shutdown.signal;
  }

  get count(): number {
    return this.#count;
  }

  /** Marks a call as started; the returned function marks it finished. */
  enter(): () => void {
    this.#count++;
    let done = false;
    return () => {
      if (done) return;
      done = true;
      this.#count--;
      if (this.#count === 0) for (const w of this.#waiters.splice(0)) w();
    };
  }

  /** Resolves true once nothing is in flight, or false when `ms` passes first. */
  async idle(ms: number): Promise<boolean> {
    if (this.#count === 0) return true;
    return new Promise((resolve) => {
      const timer = setTimeout(() => resolve(false), ms);
      this.#waiters.push(() => {
        clearTimeout(timer);
        resolve(true);
      });
    });
  }

  /** Aborts every in-flight call (after a drain deadline). */
  abortAll(): void {
    this.#shutdown.abort(new ShutdownError());
  }
}

/** The per-call deadline passed. */
export class DeadlineExceededError extends Error {
  override readonly name = 'DeadlineExceededError';
  readonly code = 'deadline_exceeded';
  constructor(readonly ms: number) {
    super(`deadline of ${ms} ms exceeded`);
  }
}

/** The client cancelled the request. */
export class CancelledError extends Error {
  override readonly name = 'CancelledError';
  readonly code = 'cancelled';
  constructor() {
    super('cancelled by the client');
  }
}

/** The server stopped waiting for the call during shutdown. */
export class ShutdownError extends Error {
  override readonly name = 'ShutdownError';
  readonly code = 'shutdown';
  constructor() {
    super('the server is shutting down');
  }
}

const DEFAULT_PAGE_SIZE = 100;
const MAX_COMPLETIONS = 100;

/** A tool prepared once per process: its listing and the hash of that listing. */
interface PreparedTool {
  readonly definition: ToolDefinition;
  /** The schema calls are validated with: the tool's, plus `dry_run` for write tools. */
  readonly input: z.ZodObject;
  readonly listing: Tool;
  readonly hash: string;
}

const DRY_RUN = z
  .boolean()
  .optional()
  .describe('Preview: return exactly what would be sent, and send nothing.');

/** The structured result of a dry run of a write tool that has an output schema. */
const DRY_RUN_RESULT = z.object({
  dry_run: z.literal(true),
  summary: z.string(),
  would_send: z.unknown(),
});

function withoutDialect(schema: Record<string, unknown>): Record<string, unknown> {
  const { $schema: _dialect, ...rest } = schema;
  return rest;
}

interface PreparedTemplate {
  readonly definition: TemplateResourceDefinition;
  readonly template: UriTemplate;
}

function prepareTool(definition: ToolDefinition): PreparedTool {
  const input =
    definition.access === 'write'
      ? definition.input.extend({ dry_run: DRY_RUN })
      : definition.input;
  const listing: Tool = {
    name: definition.name,
    title: definition.title,
    description: definition.description,
    inputSchema: z.toJSONSchema(input, { io: 'input' }) as Tool['inputSchema'],
    annotations: { title: definition.title, ...definition.annotations },
  };
  if (definition.output !== undefined) {
    const output = z.toJSONSchema(definition.output, { io: 'output' });
    // A write tool also answers dry runs, whose structured result is the preview.
    listing.outputSchema =
      definition.access === 'write'
        ? {
            type: 'object',
            anyOf: [withoutDialect(output), withoutDialect(z.toJSONSchema(DRY_RUN_RESULT))],
          }
        : output;
  }
  return { definition, input, listing, hash: sha256Canonical(listing) };
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

/** Name, access class and definition hash of every tool (for the start record). */
export function describeTools(
  definition: ServerDefinition,
): Array<{ name: string; access: 'read' | 'write'; definition_hash: string }> {
  return definition.tools.map((t) => ({
    name: t.name,
    access: t.access,
    definition_hash: prepareTool(t).hash,
  }));
}

function errorType(error: unknown): string {
  return error instanceof Error ? error.name : typeof error;
}

function contentFromBody(uri: string, body: ResourceBody): ReadResourceResult['contents'] {
  if ('contents' in body) return body.contents;
  if ('text' in body) {
    return [{ uri, text: body.text, ...(body.mimeType ? { mimeType: body.mimeType } : {}) }];
  }
  return [{ uri, blob: body.blob, ...(body.mimeType ? { mimeType: body.mimeType } : {}) }];
}

function normalizeUri(uri: string): string | undefined {
  try {
    return new URL(uri).toString();
  } catch {
    return undefined;
  }
}

/**
 * Runs `work` under a deadline and the given abort sources, and rejects with the reason as soon
 * as any fires (a handler that ignores its signal is not waited for). The signal the handler
 * sees carries a typed reason: DeadlineExceededError, CancelledError or ShutdownError.
 */
async function withDeadline<T>(
  ms: number,
  sources: { cancel: AbortSignal; shutdown?: AbortSignal | undefined },
  work: (signal: AbortSignal) => Promise<T>,
): Promise<T> {
  const controller = new AbortController();
  const timer = setTimeout(() => controller.abort(new DeadlineExceededError(ms)), ms);
  const onCancel = (): void => controller.abort(new CancelledError());
  const onShutdown = (): void => controller.abort(new ShutdownError());
  if (sources.cancel.aborted) onCancel();
  else sources.cancel.addEventListener('abort', onCancel, { once: true });
  if (sources.shutdown?.aborted) onShutdown();
  else sources.shutdown?.addEventListener('abort', onShutdown, { once: true });
  const signal = controller.signal;
  let onAbort: (() => void) | undefined;
  const aborted = new Promise<never>((_, reject) => {
    onAbort = () => reject(signal.reason as Error);
    if (signal.aborted) onAbort();
    else signal.addEventListener('abort', onAbort, { once: true });
  });
  try {
    return await Promise.race([work(signal), aborted]);
  } finally {
    clearTimeout(timer);
    sources.cancel.removeEventListener('abort', onCancel);
    sources.shutdown?.removeEventListener('abort', onShutdown);
    if (onAbort) signal.removeEventListener('abort', onAbort);
    // The race may have settled through `work`; the losing rejection must not go unhandled.
    aborted.catch(() => undefined);
  }
}

/** A server's resources, prepared once: statics by normalised URI, templates compiled. */
interface PreparedResources {
  readonly statics: ReadonlyMap<string, StaticResourceDefinition>;
  readonly templates: readonly PreparedTemplate[];
}

function prepareResources(definition: ServerDefinition): PreparedResources {
  const statics = new Map<string, StaticResourceDefinition>();
  const templates: PreparedTemplate[] = [];
  for (const r of definition.resources ?? []) {
    if (r.kind === 'static') statics.set(normalizeUri(r.uri) ?? r.uri, r);
    else templates.push({ definition: r, template: new UriTemplate(r.uriTemplate) });
  }
  return { statics, templates };
}

/** The resource an absolute URI names: a static one, or the first template that matches it. */
function findResource(
  resources: PreparedResources,
  uri: string,
  normalized: string,
):
  | { kind: 'static'; definition: StaticResourceDefinition }
  | { kind: 'template'; definition: TemplateResourceDefinition; variables: Record<string, string> }
  | undefined {
  const fixed = resources.statics.get(normalized);
  if (fixed !== undefined) return { kind: 'static', definition: fixed };
  for (const { definition, template } of resources.templates) {
    const match = template.match(uri);
    if (match !== null) return { kind: 'template', definition, variables: flatVariables(match) };
  }
  return undefined;
}

/**
 * The scope each request of a server needs, for the HTTP layer's check before anything runs (a
 * 403 the client can step up from): a tool call (when the tool is enabled), a resource read, a
 * prompt get, a completion. The pipeline checks the same scopes again with the same policy.
 */
export function createScopeLookup(
  definition: ServerDefinition,
  toolEnabled: (tool: ToolDefinition) => boolean,
): (method: string, params: Record<string, unknown> | undefined) => ScopeNeed | undefined {
  const tools = new Map(definition.tools.map((t) => [t.name, t]));
  const prompts = new Map((definition.prompts ?? []).map((p) => [p.name, p]));
  const resources = prepareResources(definition);
  const fallback = readScope(definition);
  const promptNeed = (method: ScopeNeed['method'], name: unknown): ScopeNeed | undefined => {
    const prompt = typeof name === 'string' ? prompts.get(name) : undefined;
    return prompt === undefined
      ? undefined
      : { method, name: prompt.name, scope: prompt.scope ?? fallback };
  };
  return (method, params) => {
    if (method === 'tools/call') {
      const tool = typeof params?.name === 'string' ? tools.get(params.name) : undefined;
      return tool === undefined || !toolEnabled(tool)
        ? undefined
        : { method, name: tool.name, scope: toolScope(tool) };
    }
    if (method === 'prompts/get') return promptNeed(method, params?.name);
    if (method === 'resources/read') {
      const uri = params?.uri;
      const normalized = typeof uri === 'string' ? normalizeUri(uri) : undefined;
      if (normalized === undefined) return undefined;
      const found = findResource(resources, uri as string, normalized);
      return found === undefined
        ? undefined
        : { method, name: uri as string, scope: found.definition.scope ?? fallback };
    }
    if (method === 'completion/complete') {
      const ref = params?.ref as { type?: unknown; name?: unknown; uri?: unknown } | undefined;
      if (ref?.type === 'ref/prompt') return promptNeed(method, ref.name);
      const template = resources.templates.find((t) => t.definition.uriTemplate === ref?.uri);
      return template === undefined
        ? undefined
        : {
            method,
            name: template.definition.uriTemplate,
            scope: template.definition.scope ?? fallback,
          };
    }
    return undefined;
  };
}

/**
 * Prepares a server definition once and returns the factory the SDK serving entries call:
 * a fresh SDK `Server` per connection (stdio) or per request (HTTP), with the pipeline of
 * DESIGN §3 on every tools/call, resources/read and prompts/get.
 */
export function createServerFactory(
  definition: ServerDefinition,
  runtime: Runtime,
): (ctx: McpRequestContext) => Server {
  const tools = definition.tools.map(prepareTool);
  const toolsByName = new Map(tools.map((t) => [t.definition.name, t]));
  const resources = prepareResources(definition);
  const { statics, templates } = resources;
  const defaultScope = readScope(definition);
  const prompts = new Map((definition.prompts ?? []).map((p) => [p.name, p]));
  const pageSize = runtime.pageSize ?? DEFAULT_PAGE_SIZE;
  const hasCompletions =
    templates.some((t) => t.definition.complete !== undefined) ||
    [...prompts.values()].some((p) =>
      Object.values(p.arguments ?? {}).some((a) => a.complete !== undefined),
    );
  const capabilities: ServerCapabilities = {
    tools: {},
    ...(statics.size + templates.length > 0 ? { resources: {} } : {}),
    ...(prompts.size > 0 ? { prompts: {} } : {}),
    ...(hasCompletions ? { completions: {} } : {}),
    ...(definition.logging ? { logging: {} } : {}),
  };
  const serverInfo = {
    name: definition.name,
    version: definition.version,
    ...(definition.title === undefined ? {} : { title: definition.title }),
  };
  const { logger, policy, audit } = runtime;
  const failureMode = runtime.auditFailureMode ?? 'refuse_writes';
  const stateCodec = createRequestStateCodec({
    key: runtime.stateKey ?? randomBytes(32),
    ttlSeconds: 600,
    // State minted for one method and caller is refused for any other.
    bind: (ctx) => `${ctx.mcpReq.method}\0${ctx.http?.authInfo?.clientId ?? ''}`,
  });

  return (requestContext) => {
    const principal = runtime.principal(requestContext);
    const era = requestContext.era;
    const server = new Server(serverInfo, {
      capabilities,
      ...(definition.instructions === undefined ? {} : { instructions: definition.instructions }),
      // Echoed requestState is verified before any handler runs; tampering is a -32602.
      requestState: { verify: (state, ctx) => stateCodec.verify(state, ctx) },
    });

    const visible = (tool: PreparedTool): Decision =>
      policy.toolVisible(tool.definition, principal);
    /** Resources, templates and prompts: listed exactly when they may be read, got, completed. */
    const granted = (item: { scope?: string | undefined }): Decision =>
      policy.scopeAllowed(item.scope ?? defaultScope, principal);

    type Action = 'tools/call' | 'resources/read' | 'prompts/get';
    interface Attempt {
      action: Action;
      name: string;
      eventId: string;
      startedAt: string;
      startedNs: bigint;
      args?: unknown;
      tool?: PreparedTool;
    }
    const begin = (action: Action, name: string, args?: unknown): Attempt => ({
      action,
      name,
      eventId: randomUUID(),
      startedAt: new Date().toISOString(),
      startedNs: process.hrtime.bigint(),
      ...(args === undefined ? {} : { args }),
    });

    /** Builds and writes the one audit record of an attempt, once its outcome is known. */
    const finish = (
      sctx: ServerContext,
      attempt: Attempt,
      reason: OutcomeReason,
      extra: {
        target?: string | undefined;
        decision?: Decision;
        flags?: ReadonlySet<SanitizeFlag>;
        error?: unknown;
        result?: unknown;
      } = {},
    ): void => {
      const envelope = sctx.mcpReq.envelope as Record<string, unknown> | undefined;
      const clientInfo =
        era === 'modern'
          ? (envelope?.[CLIENT_INFO_META_KEY] as { name?: string; version?: string } | undefined)
          : server.getClientVersion();
      const protocolVersion =
        era === 'modern'
          ? (envelope?.[PROTOCOL_VERSION_META_KEY] as string | undefined)
          : server.getNegotiatedProtocolVersion();
      const tool = attempt.tool?.definition;
      const types: AuditEntry['event']['type'] = [tool?.access === 'write' ? 'change' : 'access'];
      if (reason === 'denied' || reason === 'audit_unavailable') types.push('denied');
      else if (reason !== 'ok') types.push('error');
      const request = sctx.http?.req;
      const sourceIp = (sctx.http?.authInfo?.extra as { sourceIp?: unknown } | undefined)?.sourceIp;
      const userAgent = request?.headers.get('user-agent');
      const entry: AuditEntry = {
        '@timestamp': new Date().toISOString(),
        event: {
          id: attempt.eventId,
          kind: 'event',
          category: ['api'],
          type: types,
          action: attempt.action,
          outcome: reason === 'ok' ? 'success' : 'failure',
          reason,
          start: attempt.startedAt,
          duration: Number(process.hrtime.bigint() - attempt.startedNs),
        },
        user: { id: principal.id },
        auth: {
          method: principal.authMethod,
          ...(principal.credentialId === undefined
            ? {}
            : { credential_id: principal.credentialId }),
        },
        ...(clientInfo === undefined
          ? {}
          : {
              client: {
                ...(clientInfo.name === undefined
                  ? {}
                  : { name: auditMessage(clientInfo.name).slice(0, 128) }),
                ...(clientInfo.version === undefined
                  ? {}
                  : { version: auditMessage(clientInfo.version).slice(0, 64) }),
              },
            }),
        ...(typeof sourceIp === 'string' ? { source: { ip: sourceIp } } : {}),
        ...(userAgent ? { user_agent: { original: auditMessage(userAgent).slice(0, 512) } } : {}),
        mcp: {
          request_id: sctx.mcpReq.id,
          ...(protocolVersion === undefined ? {} : { protocol_version: protocolVersion }),
          era,
          transport: runtime.transport,
          name: sanitizeText(attempt.name).text.slice(0, 512),
        },
        ...(tool === undefined
          ? {}
          : {
              tool: {
                name: tool.name,
                definition_hash: attempt.tool!.hash,
                access: tool.access,
                read_only: tool.annotations.readOnlyHint,
              },
            }),
        ...(extra.target === undefined
          ? {}
          : { target: { resource: sanitizeText(extra.target).text } }),
        ...(attempt.args === undefined
          ? {}
          : {
              args: {
                shape: argsShape(attempt.args),
                sha256: sha256Canonical(attempt.args),
                ...(tool?.auditArgs === 'redacted' ? { redacted: redactArgs(attempt.args) } : {}),
              },
            }),
        ...(extra.result === undefined
          ? {}
          : {
              result: {
                ...summarize(extra.result),
                ...(extra.flags?.has('truncated') ? { truncated: true } : {}),
              },
            }),
        ...(extra.decision === undefined
          ? {}
          : {
              policy: {
                decision: extra.decision.allow ? 'allow' : 'deny',
                rule: extra.decision.rule,
              },
            }),
        ...(extra.flags && extra.flags.size > 0
          ? { sanitizer: { flags: [...extra.flags].sort() } }
          : {}),
      };
      const err = extra.error;
      if (err !== undefined) {
        entry.error = {
          type: errorType(err),
          message: auditMessage(
            sanitizeText(
              err instanceof UpstreamError
                ? err.toolMessage()
                : err instanceof Error
                  ? err.message
                  : JSON.stringify(err),
            ).text,
          ),
        };
        if (err instanceof UpstreamError) {
          entry.upstream = {
            status: err.status,
            ...(err.requestId === undefined ? {} : { request_id: err.requestId }),
            ...(err.retryAfterSeconds === undefined
              ? {}
              : { retry_after_s: err.retryAfterSeconds }),
          };
        }
      }
      try {
        audit.append(entry);
      } catch (writeError) {
        logger.error({ err: writeError, eventId: attempt.eventId }, 'audit trail failed');
      }
    };

    /** Why calls are refused while the audit trail cannot be written, if they are. */
    const auditRefusal = (tool: ToolDefinition): string | undefined => {
      if (audit.failures.size === 0 || failureMode === 'continue') return undefined;
      if (failureMode === 'refuse_writes' && tool.access !== 'write') return undefined;
      const [sink, error] = [...audit.failures.entries()][0]!;
      const code = (error as NodeJS.ErrnoException).code ?? error.name;
      return `Refused: the audit trail cannot be written (${sink}: ${code}), so ${failureMode === 'refuse_all' ? 'no tool runs' : 'write tools are disabled'} until it recovers. Nothing was changed; tell the operator.`;
    };

    const allows = (t: string): boolean => policy.targetAllowed(t).allow;
    const requestContextFor = (
      sctx: ServerContext,
      eventId: string,
      signal: AbortSignal,
      deadline = Date.now() + runtime.toolTimeoutMs,
    ): RequestContext => {
      let child: Logger | undefined;
      let nonce: string | undefined; // one per call, made on first use
      return {
        principal,
        signal,
        deadline,
        allows,
        untrusted: (content, source) =>
          frameUntrusted(content, source, (nonce ??= randomBytes(6).toString('hex'))),
        // Created on first use: most calls never log, and a child logger is not free.
        get logger() {
          return (child ??= logger.child({ eventId }));
        },
        eventId,
        era,
        canRequestClient: era === 'legacy' && runtime.transport !== 'http',
        mcp: sctx,
        sealState: (payload) => stateCodec.mint(payload, sctx),
        requestState: <T>() => sctx.mcpReq.requestState<T>(),
      };
    };

    const abortSources = (sctx: ServerContext) => ({
      cancel: sctx.mcpReq.signal,
      shutdown: runtime.inflight?.signal,
    });

    // ---- human in the loop ---------------------------------------------------------------

    const clientCapabilities = (sctx: ServerContext): ClientCapabilities | undefined =>
      era === 'modern'
        ? ((sctx.mcpReq.envelope as Record<string, unknown> | undefined)?.[
            'io.modelcontextprotocol/clientCapabilities'
          ] as ClientCapabilities | undefined)
        : server.getClientCapabilities();
    const confirmationOf = (tool: ToolDefinition, args: unknown): string =>
      sha256Canonical({ tool: tool.name, args });

    /** Whether a write may run now: confirmed, to be asked, or refused (with the reason). */
    const confirmWrite = async (
      sctx: ServerContext,
      tool: ToolDefinition,
      args: unknown,
    ): Promise<'confirmed' | 'ask' | { refusal: string }> => {
      const state = sctx.mcpReq.requestState<{ confirm?: string }>();
      if (state?.confirm !== undefined) {
        // The state is verified (HMAC, bound to method and caller) before this handler runs;
        // it must name exactly these arguments.
        if (state.confirm !== confirmationOf(tool, args)) {
          return {
            refusal:
              'The confirmation was given for different arguments; nothing was sent. Call again.',
          };
        }
        const answer = inputResponse(sctx.mcpReq.inputResponses, 'confirm');
        if (
          answer.kind === 'elicit' &&
          answer.action === 'accept' &&
          answer.content?.confirm === true
        )
          return 'confirmed';
        return { refusal: 'The user did not confirm this write; nothing was sent.' };
      }
      const canAsk =
        clientCapabilities(sctx)?.elicitation !== undefined &&
        (era === 'modern' || runtime.transport !== 'http');
      if (canAsk) return 'ask';
      if (runtime.confirmWrites?.fallback === 'proceed') return 'confirmed';
      return {
        refusal:
          "This write needs the user's confirmation, but this client cannot ask the user (no elicitation support, or a 2025-era client over stateless HTTP). Nothing was sent. Call it with dry_run: true to preview it, or ask the operator.",
      };
    };

    const askToConfirm = async (
      sctx: ServerContext,
      tool: ToolDefinition,
      args: unknown,
    ): Promise<InputRequiredResult> =>
      inputRequired({
        inputRequests: {
          confirm: inputRequired.elicit({
            message: sanitizeText(
              `Allow ${tool.title} (${tool.name}) with ${JSON.stringify(redactArgs(args))}?`,
            ).text,
            requestedSchema: {
              type: 'object',
              properties: {
                confirm: { type: 'boolean', title: 'Allow this change', default: false },
              },
              required: ['confirm'],
            },
          }),
        },
        requestState: await stateCodec.mint({ confirm: confirmationOf(tool, args) }, sctx),
      });

    // ---- tools ---------------------------------------------------------------------------

    server.setRequestHandler('tools/list', (request) => {
      const listed = tools.filter((t) => visible(t).allow).map((t) => t.listing);
      const { page, nextCursor } = paginate(listed, request.params?.cursor, pageSize);
      return nextCursor === undefined ? { tools: page } : { tools: page, nextCursor };
    });

    server.setRequestHandler('tools/call', async (request, sctx) => {
      const name = request.params.name;
      const attempt = begin('tools/call', name, request.params.arguments ?? {});
      const { eventId } = attempt;
      const prepared = toolsByName.get(name);
      if (prepared === undefined) {
        finish(sctx, attempt, 'not_found');
        throw unknownName('tool', name);
      }
      attempt.tool = prepared;
      const tool = prepared.definition;
      const decision = visible(prepared);
      if (!decision.allow) {
        // Not listed, so not callable: answer exactly as for a tool that does not exist.
        finish(sctx, attempt, 'denied', { decision });
        throw unknownName('tool', name);
      }
      const refusal = auditRefusal(tool);
      if (refusal !== undefined) {
        const refused = toolErrorResult(refusal);
        finish(sctx, attempt, 'audit_unavailable', { decision, result: refused });
        return refused;
      }

      const parsed = prepared.input.safeParse(request.params.arguments ?? {});
      if (!parsed.success) {
        const text = `Invalid arguments for ${name}:\n${z.prettifyError(parsed.error)}`;
        const invalid = toolErrorResult(text);
        finish(sctx, attempt, 'invalid_params', {
          decision,
          error: new ToolError(text, { code: 'invalid_params' }),
          result: invalid,
        });
        return invalid;
      }
      const { dry_run: dryRunArg, ...args } = parsed.data as Record<string, unknown> & {
        dry_run?: boolean;
      };
      const dryRun = dryRunArg === true;
      let targets: readonly string[];
      try {
        const declared = tool.target?.(args);
        targets =
          declared === undefined ? [] : typeof declared === 'string' ? [declared] : declared;
      } catch (error) {
        logger.error({ err: error, tool: name, eventId }, 'tool target function threw');
        const failed = toolErrorResult(
          `${name} could not determine its target (incident ${eventId}).`,
        );
        finish(sctx, attempt, 'internal_error', { decision, error, result: failed });
        return failed;
      }
      const target = targets.length === 0 ? undefined : targets.join(' ');

      // Allow-list: every target the call acts on, before anything runs.
      for (const t of targets) {
        const allowed = policy.targetAllowed(t);
        if (!allowed.allow) {
          const denied = toolErrorResult(`Denied: ${allowed.reason}. Pick an allowed target.`);
          finish(sctx, attempt, 'denied', { target, decision: allowed, result: denied });
          return denied;
        }
      }

      // Abuse limits: rate per principal and tool, concurrency per principal, the global cap.
      const slot = (await runtime.limits?.acquire(principal, tool)) ?? (() => undefined);
      if (typeof slot !== 'function') {
        const limited = toolErrorResult(slot.message);
        finish(sctx, attempt, 'rate_limited', {
          target,
          decision: { allow: false, rule: slot.rule, reason: slot.message },
          result: limited,
        });
        return limited;
      }

      const done = runtime.inflight?.enter();
      const flags = new Set<SanitizeFlag>();
      const progressToken = sctx.mcpReq._meta?.progressToken;
      let lastProgress = Number.NEGATIVE_INFINITY;
      let finished = false;
      try {
        // Human in the loop: a write asks the user first, when configured and possible.
        if (tool.access === 'write' && !dryRun && runtime.confirmWrites !== undefined) {
          const gate = await confirmWrite(sctx, tool, args);
          if (gate !== 'confirmed') {
            const answer =
              gate === 'ask' ? await askToConfirm(sctx, tool, args) : toolErrorResult(gate.refusal);
            const reason = gate === 'ask' ? 'ok' : 'denied';
            finish(sctx, attempt, reason, {
              target,
              decision:
                gate === 'ask'
                  ? decision
                  : { allow: false, rule: 'confirmation', reason: gate.refusal },
              result: answer,
            });
            return answer;
          }
        }
        const deadlineMs = tool.deadlineMs ?? runtime.toolTimeoutMs;
        const deadline = Date.now() + deadlineMs;
        const result = await withDeadline(deadlineMs, abortSources(sctx), (signal) => {
          const ctx: ToolContext = Object.assign(
            requestContextFor(sctx, eventId, signal, deadline),
            {
              dryRun,
              preview: (wouldSend: unknown, summary: string): DryRunPreview => ({
                dryRun: true,
                summary,
                wouldSend,
              }),
              progress: async (progress: number, total?: number, message?: string) => {
                if (progressToken === undefined || finished || progress <= lastProgress) return;
                lastProgress = progress;
                await sctx.mcpReq.notify({
                  method: 'notifications/progress',
                  params: {
                    progressToken,
                    progress,
                    ...(total === undefined ? {} : { total }),
                    ...(message === undefined ? {} : { message: sanitizeText(message).text }),
                  },
                });
              },
              log: async (level: Parameters<ToolContext['log']>[0], data: unknown) => {
                if (!finished) await sctx.mcpReq.log(level, sanitizeDeep(data, flags));
              },
            },
          );
          return tool.handler(args, ctx);
        });
        finished = true;
        if (isInputRequiredResult(result)) {
          const clean = sanitizeDeep(result, flags);
          finish(sctx, attempt, 'ok', { target, decision, flags, result: clean });
          return clean;
        }
        const budget = tool.maxOutputBytes ?? runtime.maxOutputBytes ?? Number.POSITIVE_INFINITY;
        let callResult: CallToolResult;
        if (isDryRunPreview(result)) {
          if (!dryRun) throw new TypeError(`${name} returned a dry-run preview for a real call`);
          const body = sanitizeDeep(result.wouldSend, flags);
          const summary = sanitizeText(result.summary, flags).text;
          callResult = {
            content: [
              {
                type: 'text',
                text: truncateText(
                  `DRY RUN — nothing was sent. ${summary}\nThis is exactly what would be sent:\n${JSON.stringify(body, null, 2)}`,
                  budget,
                  flags,
                ),
              },
            ],
            // A tool with an output schema must return structured content; a dry run's is the preview.
            ...(tool.output === undefined
              ? {}
              : { structuredContent: { dry_run: true, summary, would_send: body } }),
          };
        } else if (dryRun) {
          throw new TypeError(
            `${name} ignored dry_run: it must return ctx.preview(...) without sending anything`,
          );
        } else if (typeof result === 'string') {
          callResult = {
            content: [
              { type: 'text', text: truncateText(sanitizeText(result, flags).text, budget, flags) },
            ],
          };
        } else if ('structured' in result) {
          const structuredResult = result as StructuredToolResult<unknown>;
          const checked = tool.output?.safeParse(structuredResult.structured);
          if (checked !== undefined && !checked.success) {
            throw new TypeError(
              `structured result of ${name} does not match its output schema: ${z.prettifyError(checked.error)}`,
            );
          }
          const structured = sanitizeDeep(
            structuredResult.structured as Record<string, unknown>,
            flags,
          );
          const json = JSON.stringify(structured);
          if (Buffer.byteLength(json) > budget) {
            const tooBig = toolErrorResult(
              `The result of ${name} is ${Buffer.byteLength(json)} bytes, over its ${budget}-byte budget. Narrow the request (filters, limits, fewer fields).`,
            );
            finish(sctx, attempt, 'tool_error', {
              target,
              decision,
              flags: flags.add('truncated'),
              result: tooBig,
            });
            return tooBig;
          }
          const text =
            structuredResult.text === undefined
              ? json
              : truncateText(sanitizeText(structuredResult.text, flags).text, budget, flags);
          callResult = { content: [{ type: 'text', text }], structuredContent: structured };
        } else {
          callResult = {
            content: budgetContent(sanitizeDeep(result.content, flags), budget, flags),
          };
        }
        finish(sctx, attempt, 'ok', { target, decision, flags, result: callResult });
        return server.projectCallToolResult(callResult, prepared.listing.outputSchema);
      } catch (error) {
        finished = true;
        const failure = classifyToolFailure(error, tool, eventId, logger);
        const { reason, result } = failure;
        finish(sctx, attempt, reason, {
          target,
          decision: failure.decision ?? decision,
          flags,
          error,
          result,
        });
        if (result === undefined) throw error;
        return result;
      } finally {
        slot();
        releaseAfterResponse(done);
      }
    });

    // ---- resources -----------------------------------------------------------------------

    if (capabilities.resources) {
      server.setRequestHandler('resources/list', async (request, sctx) => {
        const eventId = randomUUID();
        const ctx = requestContextFor(sctx, eventId, sctx.mcpReq.signal);
        const listed: Array<Record<string, unknown> & { uri: string; name: string }> = [];
        for (const r of statics.values()) {
          if (!granted(r).allow) continue;
          listed.push({
            uri: r.uri,
            name: r.name,
            ...(r.title === undefined ? {} : { title: r.title }),
            ...(r.description === undefined ? {} : { description: r.description }),
            ...(r.mimeType === undefined ? {} : { mimeType: r.mimeType }),
          });
        }
        for (const { definition: t, template } of templates) {
          if (t.list === undefined || !granted(t).allow) continue;
          for (const item of await t.list(ctx)) {
            // A listing shows only what a read would allow.
            const match = template.match(item.uri);
            const variables = match === null ? {} : flatVariables(match);
            const itemTarget = t.target?.(variables);
            if (itemTarget !== undefined && !allows(itemTarget)) continue;
            listed.push({ ...(t.mimeType === undefined ? {} : { mimeType: t.mimeType }), ...item });
          }
        }
        const { page, nextCursor } = paginate(
          sanitizeDeep(listed, new Set()),
          request.params?.cursor,
          pageSize,
        );
        return nextCursor === undefined ? { resources: page } : { resources: page, nextCursor };
      });

      server.setRequestHandler('resources/templates/list', (request) => {
        const listed = templates
          .filter(({ definition: t }) => granted(t).allow)
          .map(({ definition: t }) => ({
            name: t.name,
            uriTemplate: t.uriTemplate,
            ...(t.title === undefined ? {} : { title: t.title }),
            ...(t.description === undefined ? {} : { description: t.description }),
            ...(t.mimeType === undefined ? {} : { mimeType: t.mimeType }),
          }));
        const { page, nextCursor } = paginate(listed, request.params?.cursor, pageSize);
        return nextCursor === undefined
          ? { resourceTemplates: page }
          : { resourceTemplates: page, nextCursor };
      });

      server.setRequestHandler('resources/read', async (request, sctx) => {
        const uri = request.params.uri;
        const attempt = begin('resources/read', uri);
        const { eventId } = attempt;
        const normalized = normalizeUri(uri);
        if (normalized === undefined) {
          finish(sctx, attempt, 'invalid_params');
          throw new ProtocolError(
            ProtocolErrorCode.InvalidParams,
            'Invalid resource URI: expected an absolute URI',
            { uri: sanitizeText(uri).text.slice(0, 256), reason: 'invalid_uri' },
          );
        }
        const found = findResource(resources, uri, normalized);
        if (found === undefined) {
          finish(sctx, attempt, 'not_found');
          throw new ResourceNotFoundError(uri);
        }
        // Not listed, so not readable: answered exactly as a resource that does not exist.
        const scope = granted(found.definition);
        if (!scope.allow) {
          finish(sctx, attempt, 'denied', { decision: scope });
          throw new ResourceNotFoundError(uri);
        }
        const read = (ctx: RequestContext): Promise<ResourceBody | undefined> =>
          found.kind === 'static'
            ? found.definition.read(ctx)
            : found.definition.read(uri, found.variables, ctx);
        const target =
          found.kind === 'static'
            ? found.definition.target
            : found.definition.target?.(found.variables);
        if (target !== undefined) {
          const allowed = policy.targetAllowed(target);
          if (!allowed.allow) {
            finish(sctx, attempt, 'denied', { target, decision: allowed });
            throw new ProtocolError(ProtocolErrorCode.InvalidParams, `Denied: ${allowed.reason}`, {
              uri: sanitizeText(uri).text,
            });
          }
        }
        const done = runtime.inflight?.enter();
        const flags = new Set<SanitizeFlag>();
        try {
          const body = await withDeadline(runtime.toolTimeoutMs, abortSources(sctx), (signal) =>
            read(requestContextFor(sctx, eventId, signal)),
          );
          if (body === undefined) {
            finish(sctx, attempt, 'not_found', { target });
            throw new ResourceNotFoundError(uri);
          }
          const contents = contentFromBody(uri, body).map((c) =>
            'text' in c
              ? {
                  ...c,
                  text: truncateText(
                    sanitizeText(c.text, flags).text,
                    runtime.maxOutputBytes ?? Infinity,
                    flags,
                  ),
                }
              : c,
          );
          finish(sctx, attempt, 'ok', { target, flags, result: { contents } });
          return { contents };
        } catch (error) {
          if (error instanceof ResourceNotFoundError) throw error;
          throw protocolFailure(error, 'resources/read', uri, eventId, logger, (reason, decision) =>
            finish(sctx, attempt, reason, {
              target,
              error,
              ...(decision === undefined ? {} : { decision }),
            }),
          );
        } finally {
          releaseAfterResponse(done);
        }
      });
    }

    // ---- prompts -------------------------------------------------------------------------

    if (capabilities.prompts) {
      server.setRequestHandler('prompts/list', (request) => {
        const listed = [...prompts.values()]
          .filter((p) => granted(p).allow)
          .map((p) => ({
            name: p.name,
            title: p.title,
            description: p.description,
            arguments: Object.entries(p.arguments ?? {}).map(([argName, a]) => ({
              name: argName,
              description: a.description,
              ...(a.title === undefined ? {} : { title: a.title }),
              required: a.required === true,
            })),
          }));
        const { page, nextCursor } = paginate(listed, request.params?.cursor, pageSize);
        return nextCursor === undefined ? { prompts: page } : { prompts: page, nextCursor };
      });

      server.setRequestHandler('prompts/get', async (request, sctx) => {
        const name = request.params.name;
        const attempt = begin('prompts/get', name, request.params.arguments ?? {});
        const { eventId } = attempt;
        const prompt = prompts.get(name);
        if (prompt === undefined) {
          finish(sctx, attempt, 'not_found');
          throw unknownName('prompt', name);
        }
        const scope = granted(prompt);
        if (!scope.allow) {
          finish(sctx, attempt, 'denied', { decision: scope });
          throw unknownName('prompt', name);
        }
        const problem = checkPromptArguments(prompt, request.params.arguments ?? {});
        if (problem !== undefined) {
          finish(sctx, attempt, 'invalid_params', { error: new ToolError(problem) });
          throw new ProtocolError(ProtocolErrorCode.InvalidParams, problem);
        }
        const done = runtime.inflight?.enter();
        const flags = new Set<SanitizeFlag>();
        try {
          const result = await withDeadline(runtime.toolTimeoutMs, abortSources(sctx), (signal) =>
            prompt.handler(
              request.params.arguments ?? {},
              requestContextFor(sctx, eventId, signal),
            ),
          );
          const body = sanitizeDeep(Array.isArray(result) ? { messages: result } : result, flags);
          finish(sctx, attempt, 'ok', { flags, result: body });
          return body;
        } catch (error) {
          throw protocolFailure(error, 'prompts/get', name, eventId, logger, (reason, decision) =>
            finish(sctx, attempt, reason, {
              error,
              ...(decision === undefined ? {} : { decision }),
            }),
          );
        } finally {
          releaseAfterResponse(done);
        }
      });
    }

    // ---- completion ----------------------------------------------------------------------

    if (capabilities.completions) {
      server.setRequestHandler('completion/complete', async (request) => {
        const { ref, argument } = request.params;
        const context = { arguments: request.params.context?.arguments ?? {}, principal, allows };
        let values: readonly string[];
        if (ref.type === 'ref/prompt') {
          const prompt = prompts.get(ref.name);
          if (prompt === undefined || !granted(prompt).allow) {
            throw unknownName('prompt', ref.name);
          }
          const arg = Object.hasOwn(prompt.arguments ?? {}, argument.name)
            ? prompt.arguments?.[argument.name]
            : undefined;
          if (arg === undefined) {
            throw new ProtocolError(
              ProtocolErrorCode.InvalidParams,
              `Prompt ${ref.name} has no argument "${argument.name}"`,
            );
          }
          values = (await arg.complete?.(argument.value, context)) ?? [];
        } else {
          const t = templates.find(
            (x) => x.definition.uriTemplate === ref.uri && granted(x.definition).allow,
          );
          if (t === undefined) {
            const fixed = statics.get(normalizeUri(ref.uri) ?? ref.uri);
            if (fixed !== undefined && granted(fixed).allow) {
              return { completion: { values: [], total: 0, hasMore: false } };
            }
            throw new ProtocolError(
              ProtocolErrorCode.InvalidParams,
              `Unknown resource template: ${ref.uri}`,
            );
          }
          const complete = Object.hasOwn(t.definition.complete ?? {}, argument.name)
            ? t.definition.complete?.[argument.name]
            : undefined;
          values = (await complete?.(argument.value, context)) ?? [];
        }
        const clean = values.map((v) => sanitizeText(v).text);
        return {
          completion: {
            values: clean.slice(0, MAX_COMPLETIONS),
            total: clean.length,
            hasMore: clean.length > MAX_COMPLETIONS,
          },
        };
      });
    }

    definition.configure?.(server);
    return server;
  };
}

/**
 * Marks a call finished only after the SDK has written its response: the SDK sends it in the
 * microtasks that follow the handler, so a drain that waits for the counter never closes the
 * transport between a finished handler and its answer.
 */
function releaseAfterResponse(done: (() => void) | undefined): void {
  if (done) setImmediate(done);
}

/** URI template variables as plain strings (exploded lists joined with commas). */
function flatVariables(match: Record<string, string | string[]>): Record<string, string> {
  return Object.fromEntries(
    Object.entries(match).map(([k, v]) => [k, Array.isArray(v) ? v.join(',') : v]),
  );
}

function isDryRunPreview(value: unknown): value is DryRunPreview {
  return (
    typeof value === 'object' && value !== null && (value as { dryRun?: unknown }).dryRun === true
  );
}

/** Keeps content blocks within a byte budget, cutting text with an honest marker. */
function budgetContent(
  content: ContentBlock[],
  budget: number,
  flags: Set<SanitizeFlag>,
): ContentBlock[] {
  let remaining = budget;
  const kept: ContentBlock[] = [];
  for (const block of content) {
    const size =
      block.type === 'text'
        ? Buffer.byteLength(block.text)
        : Buffer.byteLength(JSON.stringify(block));
    if (size <= remaining) {
      kept.push(block);
      remaining -= size;
    } else if (block.type === 'text' && remaining > 200) {
      kept.push({ ...block, text: truncateText(block.text, remaining, flags) });
      remaining = 0;
    } else {
      flags.add('truncated');
      kept.push({
        type: 'text',
        text: `…[truncated: ${content.length - kept.length} more content block(s) not shown; narrow the request]`,
      });
      break;
    }
  }
  return kept;
}

/** The -32602 for a name that does not exist (or that the policy hides: same answer). */
function unknownName(kind: 'tool' | 'prompt', name: string): ProtocolError {
  return new ProtocolError(
    ProtocolErrorCode.InvalidParams,
    `Unknown ${kind}: ${sanitizeText(name).text.slice(0, 128)}`,
  );
}

function toolErrorResult(text: string): CallToolResult {
  const content: ContentBlock[] = [{ type: 'text', text: sanitizeText(text).text }];
  return { content, isError: true };
}

/**
 * Maps a failure of a tool handler to an audit reason and the result the model sees.
 * `result` is undefined when the failure must travel as a protocol error (client cancellation,
 * which gets no response at all, and deliberate protocol errors from the handler).
 */
function classifyToolFailure(
  error: unknown,
  tool: ToolDefinition,
  eventId: string,
  logger: Logger,
): { reason: OutcomeReason; result?: CallToolResult; decision?: Decision } {
  if (error instanceof PolicyError) {
    return {
      reason: 'denied',
      result: toolErrorResult(error.message),
      decision: { allow: false, rule: error.rule, reason: error.message },
    };
  }
  if (error instanceof ToolError)
    return { reason: 'tool_error', result: toolErrorResult(error.message) };
  if (error instanceof UpstreamError) {
    if (error.status >= 500) {
      logger.warn({ err: error, tool: tool.name, eventId }, 'upstream failure');
    }
    return {
      reason: error.status === 429 ? 'rate_limited' : 'upstream_error',
      result: toolErrorResult(error.toolMessage()),
    };
  }
  if (error instanceof DeadlineExceededError) {
    return {
      reason: 'timeout',
      result: toolErrorResult(
        `${tool.name} did not finish within ${error.ms / 1000}s and was stopped. Try a narrower request, or try again later.`,
      ),
    };
  }
  if (error instanceof ShutdownError) {
    return {
      reason: 'cancelled',
      result: toolErrorResult(
        `The server is shutting down; ${tool.name} was stopped. Retry shortly.`,
      ),
    };
  }
  if (error instanceof CancelledError) return { reason: 'cancelled' };
  if (error instanceof ProtocolError) {
    return {
      reason:
        (error.code as ProtocolErrorCode) === ProtocolErrorCode.InvalidParams
          ? 'invalid_params'
          : 'internal_error',
    };
  }
  logger.error({ err: error, tool: tool.name, eventId }, 'tool handler failed');
  return {
    reason: 'internal_error',
    result: toolErrorResult(
      `${tool.name} failed with an internal error (incident ${eventId}). The details are in the server log; retrying is unlikely to help.`,
    ),
  };
}

/**
 * Maps a failure of a resource or prompt handler to a JSON-RPC error (these methods have no
 * `isError` result), writing the audit record through `record`.
 */
function protocolFailure(
  error: unknown,
  method: string,
  name: string,
  eventId: string,
  logger: Logger,
  record: (reason: OutcomeReason, decision?: Decision) => void,
): ProtocolError {
  if (error instanceof PolicyError) {
    record('denied', { allow: false, rule: error.rule, reason: error.message });
    return new ProtocolError(ProtocolErrorCode.InvalidParams, sanitizeText(error.message).text);
  }
  if (error instanceof ProtocolError) {
    record(
      (error.code as ProtocolErrorCode) === ProtocolErrorCode.InvalidParams
        ? 'invalid_params'
        : 'internal_error',
    );
    return error;
  }
  if (error instanceof ToolError) {
    record('tool_error');
    return new ProtocolError(ProtocolErrorCode.InvalidParams, sanitizeText(error.message).text);
  }
  if (error instanceof UpstreamError) {
    record(error.status === 429 ? 'rate_limited' : 'upstream_error');
    return new ProtocolError(ProtocolErrorCode.InternalError, error.toolMessage());
  }
  if (error instanceof DeadlineExceededError) {
    record('timeout');
    return new ProtocolError(ProtocolErrorCode.InternalError, `${method} ${name} timed out`);
  }
  if (error instanceof CancelledError || error instanceof ShutdownError) {
    record('cancelled');
    return new ProtocolError(ProtocolErrorCode.InternalError, `${method} ${name} was cancelled`);
  }
  logger.error({ err: error, method, name, eventId }, 'handler failed');
  record('internal_error');
  return new ProtocolError(
    ProtocolErrorCode.InternalError,
    `Internal error (incident ${eventId}); the details are in the server log`,
  );
}

function checkPromptArguments(
  prompt: PromptDefinition,
  given: Readonly<Record<string, string>>,
): string | undefined {
  const declared = prompt.arguments ?? {};
  const unknown = Object.keys(given).filter((k) => !Object.hasOwn(declared, k));
  if (unknown.length > 0) {
    return `Unknown argument(s) for prompt ${prompt.name}: ${unknown.join(', ')}; expected: ${Object.keys(declared).join(', ') || 'none'}`;
  }
  const missing = Object.entries(declared)
    .filter(([k, a]) => a.required === true && (given[k] === undefined || given[k] === ''))
    .map(([k]) => k);
  if (missing.length > 0) {
    return `Missing required argument(s) for prompt ${prompt.name}: ${missing.join(', ')}`;
  }
  for (const [k, a] of Object.entries(declared)) {
    const value = given[k];
    if (value === undefined || a.schema === undefined) continue;
    const checked = a.schema.safeParse(value);
    if (!checked.success) {
      return `Invalid argument "${k}" for prompt ${prompt.name}: ${checked.error.issues.map((i) => i.message).join('; ')}`;
    }
  }
  return undefined;
}
