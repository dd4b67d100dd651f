import type {
  BlobResourceContents,
  ContentBlock,
  InputRequiredResult,
  LoggingLevel,
  PromptMessage,
  Resource,
  Server,
  ServerContext,
  TextResourceContents,
} from '@modelcontextprotocol/server';
import * as z from 'zod';
import type { Logger } from './logger.js';
import type { Principal } from './principal.js';
import type { UpstreamCredential, UpstreamIdentity } from './identity/mode.js';

/** Whether a tool only reads (`read`) or changes something upstream (`write`). */
export type Access = 'read' | 'write';

/** The four MCP tool annotations; all are required so no tool relies on the spec defaults. */
export interface ToolAnnotations {
  readOnlyHint: boolean;
  destructiveHint: boolean;
  idempotentHint: boolean;
  openWorldHint: boolean;
}

/**
 * The annotations of a tool that only reads from a closed system the operator configured (a
 * database, one API): read-only, not destructive, idempotent, closed world.
 */
export const READ_ONLY_ANNOTATIONS: Readonly<ToolAnnotations> = Object.freeze({
  readOnlyHint: true,
  destructiveHint: false,
  idempotentHint: true,
  openWorldHint: false,
});

/**
 * The annotations of a write that destroys nothing and may be repeated with no further effect
 * (a post the dedupe window answers with the first, a grant revoked): open world.
 */
export const IDEMPOTENT_WRITE_ANNOTATIONS: Readonly<ToolAnnotations> = Object.freeze({
  readOnlyHint: false,
  destructiveHint: false,
  idempotentHint: true,
  openWorldHint: true,
});

/**
 * What a call passes down to every upstream request: its abort signal and its deadline (a
 * {@link RequestContext} is one). Vendor clients take this, not the whole context.
 */
export interface CallBounds {
  readonly signal: AbortSignal;
  /** Epoch ms by which the call must be answered. */
  readonly deadline: number;
}

/** What every handler (tool, resource, prompt) gets from the pipeline. */
export interface RequestContext extends CallBounds {
  /** Who is calling; from authentication, never from arguments. */
  readonly principal: Principal;
  /** Fires on client cancellation, on the deadline and on forced shutdown. Pass it upstream. */
  readonly signal: AbortSignal;
  /** A child logger bound to this request (stderr). */
  readonly logger: Logger;
  /** The id of this attempt; the audit record carries the same id. */
  readonly eventId: string;
  /** The protocol era of the request. */
  readonly era: 'legacy' | 'modern';
  /**
   * Whether server→client requests (elicitation, sampling) can be sent and answered: only on a
   * 2025-era connection that stays open (stdio). Stateless HTTP cannot route the client's answer
   * back; the 2026-07-28 era uses input-required results instead.
   */
  readonly canRequestClient: boolean;
  /** The raw SDK context, for protocol features the core does not wrap (fixtures, elicitation). */
  readonly mcp: ServerContext;
  /** Epoch ms by which the call must be answered (pass to `withRetry`). */
  readonly deadline: number;
  /** Whether a target is inside the allow-list (to narrow upstream queries, e.g. a search). */
  allows(target: string): boolean;
  /**
   * Frames third-party content (issue bodies, messages, rows) as untrusted data between
   * per-call boundary markers the content cannot forge.
   */
  untrusted(content: string, source: string): string;
  /**
   * Frames one third-party string where it sits among others — a value in a JSON resource, a
   * name in a preview — with the same markers and no note (the answer's text carries the note):
   * `<untrusted-data-N>value</untrusted-data-N>`. An empty string stays empty.
   */
  untrustedValue(content: string): string;
  /**
   * Seals a payload into an integrity-protected `requestState` string (HMAC, bound to the
   * principal, expiring) for an input-required result; the client cannot alter it.
   */
  sealState(payload: unknown): Promise<string>;
  /** The verified payload of the `requestState` the client echoed, if any. */
  requestState<T = unknown>(): T | undefined;
  /**
   * The credential this call acts with upstream (ADR 0026): the service's, or — on a server with
   * a per-person `identity` — the caller's own grant. Throws the answer that asks them to
   * connect when they have none; never falls back to the service's unless the operator named
   * this read tool for it.
   */
  credential(): Promise<UpstreamCredential>;
  /**
   * Names what the call acts on once the handler has resolved it — a name to what it stands for
   * in the caller's own view upstream, which no declared `target` can know before the call. It
   * is checked against the allow-list as a declared target is (outside it: the same refusal,
   * thrown) and becomes the call's target in the audit record.
   */
  actsOn(target: string): void;
  /**
   * Names who the call acts as upstream when that is not an upstream credential's account — a
   * database role chosen for the caller (servers/postgres, ADR 0027). It becomes the audit
   * record's `user.effective`.
   */
  actsAs(effective: EffectiveUser): void;
}

/** Who a call acted as upstream (ECS `user.effective`): an id, a name, the system's domain. */
export interface EffectiveUser {
  readonly id: string;
  readonly name: string;
  readonly domain: string;
}

/** The context of a tool handler. */
export interface ToolContext extends RequestContext {
  /** Reports progress when the client asked for it (a progress token); a no-op otherwise. */
  progress(progress: number, total?: number, message?: string): Promise<void>;
  /** Sends an MCP log notification when the server declares logging and the client asked for it. */
  log(level: LoggingLevel, data: unknown): Promise<void>;
  /** True when a write tool was called with `dry_run: true`: send nothing, return `preview(...)`. */
  readonly dryRun: boolean;
  /** The result of a dry run: exactly what would be sent, and a one-line summary. */
  preview(wouldSend: unknown, summary: string): DryRunPreview;
  /** The tool's bound parameters, resolved from the caller (empty for a tool without any). */
  readonly bound: Readonly<Record<string, unknown>>;
}

/** What a write tool returns on a dry run. */
export interface DryRunPreview {
  readonly dryRun: true;
  readonly summary: string;
  readonly wouldSend: unknown;
}

/** The result of a tool with an output schema. */
export interface StructuredToolResult<T> {
  structured: T;
  /** The compact text form for the model; defaults to the JSON of `structured`. */
  text?: string;
}

/** The result of a tool without an output schema: plain text or content blocks. */
export type PlainToolResult = string | { content: ContentBlock[] };

/** What a tool handler returns; an `InputRequiredResult` asks the client for input (2026 MRTR). */
export type ToolHandlerResult<O> = [O] extends [z.ZodType]
  ? StructuredToolResult<z.output<O>> | InputRequiredResult | DryRunPreview
  : PlainToolResult | InputRequiredResult | DryRunPreview;

/** A tool parameter whose value is the caller's (ToolDefinition `bound`). */
export interface BoundParameter {
  /** The name the handler reads it under (`ctx.bound[name]`). */
  readonly name: string;
  /** `principal` (the caller's id) or `claim:<name>` (a claim of its credential). */
  readonly from: string;
  /**
   * The value as the handler takes it, or a throw when the caller's value does not fit (the
   * call is then refused, naming the parameter, never echoing the value).
   */
  check?(value: string): unknown;
}

/** A tool as data plus a handler (docs/adding-a-server.md, ADR 0002). */
export interface ToolDefinition<
  I extends z.ZodObject = z.ZodObject,
  O extends z.ZodType | undefined = z.ZodType | undefined,
> {
  /** `service_verb_noun`; unique within the server. */
  name: string;
  title: string;
  /** What the model reads to decide when to use the tool. */
  description: string;
  access: Access;
  /**
   * The scope a principal needs (`postgres:read`, `github:write`); default `<name prefix>:<access>`
   * (`postgres_query` → `postgres:read`). Tools whose scope the principal lacks are neither listed
   * nor callable.
   */
  scope?: string;
  /** A group name the enable/disable lists accept instead of each tool name (`issues`, `comments`). */
  toolset?: string;
  annotations: ToolAnnotations;
  /** A strict zod object (`z.strictObject`): bounded, described fields, no unknown keys. */
  input: I;
  /** Optional output schema; when set the handler returns `{ structured }`. */
  output?: O;
  /**
   * What the call acts on, as policy and audit see it (`github:org/repo#45`); every target is
   * checked against the allow-list before the handler runs.
   */
  target?(args: z.output<I>): string | readonly string[] | undefined;
  /** Per-call deadline; defaults to `GATEHOUSE_TOOL_TIMEOUT_MS`. */
  deadlineMs?: number;
  /** Size budget of the result; defaults to `GATEHOUSE_MAX_OUTPUT_BYTES`. */
  maxOutputBytes?: number;
  /**
   * What the audit record keeps of the arguments: `shape` (default: structure and SHA-256 only)
   * or `redacted` (also the values, secrets scrubbed, long strings cut) — for write tools, whose
   * content is evidence.
   */
  auditArgs?: 'shape' | 'redacted';
  /**
   * Parameters taken from the caller, never from the model: each resolved from the principal
   * before the handler runs (`ctx.bound`), absent from the input schema, refused by name when a
   * call sends it anyway (in any case or spelling of the name), and recorded as a SHA-256 in the
   * audit record (`args.bound`).
   */
  bound?: readonly BoundParameter[];
  // Method syntax: a ToolDefinition<I, O> stays assignable to the erased ToolDefinition.
  handler(args: z.output<I>, ctx: ToolContext): Promise<ToolHandlerResult<O>>;
}

/** The body of a resource read: text, base64 blob, or several contents. */
export type ResourceBody =
  | { text: string; mimeType?: string }
  | { blob: string; mimeType?: string }
  | { contents: Array<TextResourceContents | BlobResourceContents> };

/** A completion callback: candidate values for `value`, given the other arguments. */
export type Completer = (
  value: string,
  context: {
    arguments: Readonly<Record<string, string>>;
    principal: Principal;
    /** Whether a target is inside the allow-list (completions must not reveal others). */
    allows: (target: string) => boolean;
    /** Aborted at the deadline, on cancellation and at shutdown (the runner's signal). */
    signal: AbortSignal;
    /** Epoch ms by which the completion must be answered. */
    deadline: number;
    /**
     * The caller's upstream credential, as a handler's (ADR 0026), for completing from what the
     * caller sees upstream; never the service's for a person, so never a fallback.
     */
    credential(): Promise<UpstreamCredential>;
  },
) => Promise<readonly string[]> | readonly string[];

/** A resource with a fixed URI. */
export interface StaticResourceDefinition {
  kind: 'static';
  name: string;
  uri: string;
  title?: string;
  description?: string;
  mimeType?: string;
  target?: string;
  /** The scope a principal needs to list and read it (default: the server's read scope). */
  scope?: string;
  read: (ctx: RequestContext) => Promise<ResourceBody>;
}

/** A family of resources behind an RFC 6570 URI template. */
export interface TemplateResourceDefinition {
  kind: 'template';
  name: string;
  uriTemplate: string;
  title?: string;
  description?: string;
  mimeType?: string;
  /** Lists concrete resources for `resources/list`. */
  list?: (
    ctx: RequestContext,
  ) => Promise<Array<Omit<Resource, 'mimeType'> & { mimeType?: string }>>;
  /** Completion per template variable. */
  complete?: Readonly<Record<string, Completer>>;
  /** The scope a principal needs to list, read and complete it (default: the server's read scope). */
  scope?: string;
  target?: (variables: Readonly<Record<string, string>>) => string | undefined;
  /** Reads one resource; `undefined` means it does not exist (a not-found error). */
  read: (
    uri: string,
    variables: Readonly<Record<string, string>>,
    ctx: RequestContext,
  ) => Promise<ResourceBody | undefined>;
}

/** A static or templated resource. */
export type ResourceDefinition = StaticResourceDefinition | TemplateResourceDefinition;

/** One argument of a prompt (prompt arguments are strings on the wire). */
export interface PromptArgument {
  description: string;
  title?: string;
  required?: boolean;
  /** Further validation of the value; a failure is a -32602 naming the argument. */
  schema?: z.ZodType<string, string>;
  complete?: Completer;
}

/** The result of a prompt handler. */
export type PromptHandlerResult =
  PromptMessage[] | { description?: string; messages: PromptMessage[] } | InputRequiredResult;

/** A prompt's arguments as its handler gets them (strings on the wire; optional ones may be absent). */
export type PromptArgs<A extends Record<string, PromptArgument>> = {
  [K in keyof A]: A[K]['required'] extends true ? string : string | undefined;
};

/** A reusable prompt. */
export interface PromptDefinition<
  A extends Record<string, PromptArgument> = Record<string, PromptArgument>,
> {
  name: string;
  title: string;
  description: string;
  arguments?: A;
  /** The scope a principal needs to list, get and complete it (default: the server's read scope). */
  scope?: string;
  /**
   * What a get acts on, as policy and audit see it (`jira:OPS`), like a tool's: every target is
   * checked against the allow-list before the handler runs. May throw a PolicyError (a name
   * outside the server's own list) or a ToolError (not a name at all): the refusal is answered
   * as the JSON-RPC error of its row, and the handler never sees the argument.
   */
  target?(args: PromptArgs<A>): string | readonly string[] | undefined;
  handler(args: PromptArgs<A>, ctx: RequestContext): Promise<PromptHandlerResult>;
}

/** What a running server offers its definition (see `ServerDefinition.onStart`). */
export interface ServerHost {
  /**
   * Records that a safety check was overridden by configuration: a warning in the log and a
   * `gatehouse/security_override` audit record naming the setting and what it let through.
   */
  securityOverride(setting: string, details: Record<string, unknown>): void;
}

/**
 * What a server checks at start about its upstream, and how the core treats the outcome:
 * - `check()` resolves: its summary is logged, each warning (credentials broader than needed,
 *   a configured name they cannot see) is a logged warning, and the server serves;
 * - it throws a {@link CredentialError}: the start is refused, exit code 2, naming the variable;
 * - it throws an `UpstreamError` (the vendor is down or unreachable): the server starts unready,
 *   and `/readyz` runs the check again (at most every `recheckMs`, default 5 s) until it passes.
 */
export interface StartupCheck {
  /** The upstream as the operator knows it (`GitHub`, `PostgreSQL`), for the log and /readyz. */
  readonly upstream: string;
  check(): Promise<StartupReport>;
  readonly recheckMs?: number;
}

/** What a start-up check found. */
export interface StartupReport {
  /** One log line: what passed (`GitHub access checked`). */
  readonly message: string;
  /** Secret-free details for that line (identity, what the credentials reach). */
  readonly details?: Record<string, unknown>;
  /** Each one a logged warning. */
  readonly warnings?: readonly string[];
}

/** Result of a readiness check. */
export interface ReadyResult {
  ready: boolean;
  /** A short, secret-free reason shown on `/readyz`. */
  detail?: string;
}

/** A whole server as plain data; the core builds an SDK server from it per connection/request. */
export interface ServerDefinition {
  name: string;
  version: string;
  title?: string;
  instructions?: string;
  tools: readonly ToolDefinition[];
  /**
   * The scope resources, resource templates, prompts and completions need unless they name their
   * own (default: `<prefix>:read`, the prefix of the tool names — `postgres:read`).
   */
  readScope?: string;
  resources?: readonly ResourceDefinition[];
  prompts?: readonly PromptDefinition[];
  /** Declare the MCP logging capability (deprecated in 2026-07-28; off by default). */
  logging?: boolean;
  /** Readiness check behind `/readyz` (upstream reachable, pool healthy). */
  ready?: () => Promise<ReadyResult>;
  /**
   * The start-up check of the upstream credentials; the core owns its outcomes (see
   * {@link StartupCheck}).
   */
  startup?: StartupCheck;
  /** Releases upstream resources (pools, clients) on shutdown. */
  close?: () => Promise<void>;
  /**
   * Acting as each person upstream (ADR 0026): the vault, the `/connect` pages and the vendor's
   * refresh. Absent: every call acts with the service credential.
   */
  identity?: UpstreamIdentity;
  /**
   * What the start record (`gatehouse/start`) says of the server beyond its configuration and
   * tools: a file it read at start and its SHA-256, for instance. Secrets never go here.
   */
  startDetails?: Readonly<Record<string, unknown>>;
  /**
   * Called once the server runs, with the hooks a server uses to report to the operator and the
   * audit trail (e.g. a safety check overridden by configuration, possibly found later).
   */
  onStart?: (host: ServerHost) => void;
  /**
   * Registers protocol handlers the core does not provide (e.g. resources/subscribe in the
   * conformance fixture). Runs on every fresh SDK server, after the core's handlers.
   */
  configure?: (server: Server) => void;
}

const TOOL_NAME = /^[A-Za-z0-9_.-]{1,128}$/;

/**
 * Declares a tool. Checks at definition time what would otherwise surface as a confusing
 * runtime failure: the name pattern, a strict input schema, the annotations matching the
 * access class.
 */
export function defineTool<I extends z.ZodObject, O extends z.ZodType | undefined = undefined>(
  definition: ToolDefinition<I, O>,
): ToolDefinition<I, O> {
  if (!TOOL_NAME.test(definition.name)) {
    throw new TypeError(`Tool name "${definition.name}" must match ${TOOL_NAME.source}`);
  }
  if (!(definition.input instanceof z.ZodObject)) {
    throw new TypeError(`Tool ${definition.name}: input must be a zod object schema`);
  }
  const catchall = definition.input.def.catchall;
  if (!(catchall instanceof z.ZodNever)) {
    throw new TypeError(
      `Tool ${definition.name}: input must be strict (z.strictObject) so unknown keys are refused`,
    );
  }
  if (definition.access === 'read' && !definition.annotations.readOnlyHint) {
    throw new TypeError(`Tool ${definition.name}: a read tool must set readOnlyHint: true`);
  }
  if (definition.access === 'write' && definition.annotations.readOnlyHint) {
    throw new TypeError(`Tool ${definition.name}: a write tool cannot set readOnlyHint: true`);
  }
  // The model reads each argument's description (in the input JSON schema) to fill it in: none
  // may be left without one.
  const properties = (z.toJSONSchema(definition.input, { io: 'input' }).properties ?? {}) as Record<
    string,
    { description?: string }
  >;
  const undescribed = Object.entries(properties)
    .filter(([, property]) => (property.description ?? '').trim() === '')
    .map(([name]) => name);
  if (undescribed.length > 0) {
    throw new TypeError(
      `Tool ${definition.name}: every argument needs a description (.describe(...)); missing on ${undescribed.join(', ')}`,
    );
  }
  if (definition.access === 'write' && 'dry_run' in definition.input.shape) {
    throw new TypeError(
      `Tool ${definition.name}: dry_run is added by the core to every write tool`,
    );
  }
  return definition;
}

/** Declares a resource (static URI or URI template). */
export function defineResource<R extends ResourceDefinition>(definition: R): R {
  if (definition.kind === 'static') {
    try {
      new URL(definition.uri);
    } catch {
      throw new TypeError(
        `Resource ${definition.name}: "${definition.uri}" is not an absolute URI`,
      );
    }
  }
  return definition;
}

/** Declares a prompt. */
export function definePrompt<A extends Record<string, PromptArgument>>(
  definition: PromptDefinition<A>,
): PromptDefinition<A> {
  return definition;
}

/**
 * The most characters of a description or of a server's instructions a client shows whole: Claude
 * Code cuts longer ones without a word. `defineServer` refuses longer instructions and
 * descriptions of tools, resources and prompts.
 */
export const MAX_LISTED_TEXT = 2_048;

/**
 * Names for a server's instructions or a description, bounded: `a, b, c` while they fit in `room`
 * characters, else as many as fit and `and N more` — a configured list (repositories, projects,
 * schemas, masked columns) of any length keeps the instructions within {@link MAX_LISTED_TEXT}.
 */
export function namesInWords(names: readonly string[], room = 300): string {
  if (names.join(', ').length <= room) return names.join(', ');
  // As many names as fit with " and N more" after them; at least one.
  let count = 1;
  let length = names[0]!.length;
  for (const name of names.slice(1)) {
    const next = length + 2 + name.length;
    if (next + ` and ${names.length - count - 1} more`.length > room) break;
    length = next;
    count += 1;
  }
  return `${names.slice(0, count).join(', ')} and ${names.length - count} more`;
}

/** Declares a server; rejects duplicate tool, resource and prompt names. */
export function defineServer(definition: ServerDefinition): ServerDefinition {
  const seen = new Set<string>();
  const check = (kind: string, key: string, description?: string): void => {
    const id = `${kind}:${key}`;
    if (seen.has(id)) throw new TypeError(`Server ${definition.name}: duplicate ${kind} "${key}"`);
    seen.add(id);
    // What a client lists is shown whole only up to MAX_LISTED_TEXT; the rest is cut unseen.
    if ((description?.length ?? 0) > MAX_LISTED_TEXT)
      throw new TypeError(
        `Server ${definition.name}: the ${kind === 'server' ? 'instructions are' : `description of ${kind} "${key}" is`} ${description!.length} characters, over ${MAX_LISTED_TEXT} (clients cut them)${kind === 'server' ? '; name configured lists with namesInWords' : ''}`,
      );
  };
  check('server', definition.name, definition.instructions);
  for (const t of definition.tools) check('tool', t.name, t.description);
  for (const r of definition.resources ?? [])
    check('resource', r.kind === 'static' ? r.uri : r.uriTemplate, r.description);
  for (const p of definition.prompts ?? []) check('prompt', p.name, p.description);
  // A tool without a scope of its own needs the server's (`<service>:<access>`, from the server's
  // name): never one made from the tool's name, which may come from a file.
  const service = serviceOf(definition);
  return {
    ...definition,
    tools: definition.tools.map((t) =>
      t.scope === undefined ? { ...t, scope: `${service}:${t.access}` } : t,
    ),
  };
}

/** The service a server's scopes are named after: its name without `gatehouse-`. */
export function serviceOf(definition: Pick<ServerDefinition, 'name'>): string {
  return definition.name.replace(/^gatehouse-/, '');
}
