import { parseJSONRPCMessage, specTypeSchemas } from '@modelcontextprotocol/server';
import type { JSONRPCErrorResponse, JSONRPCMessage } from '@modelcontextprotocol/server';
import type * as z from 'zod';

/**
 * The JSON-RPC front door shared by both transports: what a message must look like before any
 * SDK code sees it, and the answer — in our words, with the caller's id whenever it can be read —
 * when it does not. Every request gets exactly one answer; nothing the engine says about itself
 * (a stack overflow, a schema library's message) reaches the client.
 */

/** Deepest nesting of objects and arrays accepted in a message (tool arguments included). */
export const MAX_JSON_DEPTH = 64;

/** JSON-RPC error codes the front door answers with. */
export const RPC = {
  parseError: -32700,
  invalidRequest: -32600,
  methodNotFound: -32601,
  invalidParams: -32602,
} as const;

/**
 * Whether JSON text nests objects and arrays deeper than `max`, found by counting brackets
 * outside strings — without parsing, so a hostile depth never reaches a recursive parser,
 * validator or serialiser.
 */
export function nestsDeeperThan(text: string, max = MAX_JSON_DEPTH): boolean {
  if (text.length <= max) return false;
  let depth = 0;
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (inString) {
      if (c === 0x5c) i++;
      else if (c === 0x22) inString = false;
    } else if (c === 0x22) inString = true;
    else if (c === 0x7b || c === 0x5b) {
      if (++depth > max) return true;
    } else if (c === 0x7d || c === 0x5d) depth--;
  }
  return false;
}

/** A JSON-RPC id the answer can carry: a string or a safe integer (anything else is null). */
export type ReadableId = string | number | null;

function readableId(id: unknown): ReadableId {
  return typeof id === 'string' || Number.isSafeInteger(id) ? (id as string | number) : null;
}

/**
 * A parsed message as a request (an object with an id that is no response), with the id an
 * answer can carry; undefined for notifications, responses and what is not an object.
 */
export function asRequest(value: unknown): { id: ReadableId } | undefined {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return undefined;
  const isRequest = 'id' in value && !('result' in value) && !('error' in value);
  return isRequest ? { id: readableId(value.id) } : undefined;
}

/**
 * The id of a message whose text could not be parsed whole (too deep, too large): read from the
 * leading keys of its top-level object while their values are strings, numbers, booleans or
 * null — clients write `jsonrpc`, `id` and `method` first — so the caller still gets its answer.
 */
export function leadingId(text: string): ReadableId {
  const head = text.slice(0, 4096);
  const scalar = String.raw`"(?:[^"\\]|\\.)*"|-?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?|true|false|null`;
  const pair = new RegExp(String.raw`\s*("(?:[^"\\]|\\.)*")\s*:\s*(${scalar})\s*(,|})`, 'y');
  const open = /^\s*\{/.exec(head);
  if (open === null) return null;
  pair.lastIndex = open[0].length;
  for (let match = pair.exec(head); match !== null; match = pair.exec(head)) {
    try {
      if (JSON.parse(match[1]!) === 'id') return readableId(JSON.parse(match[2]!));
    } catch {
      return null;
    }
    if (match[3] === '}') return null;
  }
  return null;
}

/** A JSON-RPC error response in our words. */
export function rpcError(id: ReadableId, code: number, message: string): JSONRPCErrorResponse {
  return { jsonrpc: '2.0', id: id as JSONRPCErrorResponse['id'], error: { code, message } };
}

/** What the front door decided about one parsed message. */
export type Inspected =
  | { readonly ok: true; readonly message: JSONRPCMessage }
  /** `reply` is absent for what must not be answered: notifications and responses. */
  | { readonly ok: false; readonly reply?: JSONRPCErrorResponse; readonly problem: string };

type Issue = z.core.$ZodIssue;

const typeName = (expected: string): string =>
  expected === 'int'
    ? 'an integer'
    : /^[aeiou]/.test(expected)
      ? `an ${expected}`
      : `a ${expected}`;

/**
 * The one issue worth telling the caller, as a path and a problem in our words (never the
 * value): inside a union (request | notification | response), the branch with the fewest
 * issues — the message type the caller meant.
 */
function describeIssue(
  issues: readonly Issue[] | undefined,
  prefix: readonly PropertyKey[] = [],
): { path: string; problem: string } {
  const issue = issues?.[0];
  if (issue === undefined) return { path: '', problem: 'is not a valid JSON-RPC message' };
  const path = [...prefix, ...issue.path];
  if (issue.code === 'invalid_union' && issue.errors.length > 0) {
    const branches = issue.errors;
    // A choice between plain types (a progress token: string or integer) is one problem.
    if (
      branches.every(
        (b) => b.length === 1 && b[0]!.code === 'invalid_type' && b[0].path.length === 0,
      )
    ) {
      const expected = branches.map((b) => typeName((b[0] as { expected: string }).expected));
      return { path: path.map(String).join('.'), problem: `must be ${expected.join(' or ')}` };
    }
    const best = branches.reduce((a, b) => (b.length < a.length ? b : a));
    return describeIssue(best, path);
  }
  const problem =
    issue.code === 'invalid_type'
      ? `must be ${typeName(issue.expected)}`
      : issue.code === 'too_big' || issue.code === 'too_small'
        ? 'is out of range'
        : issue.code === 'unrecognized_keys'
          ? 'has unknown keys'
          : 'is not valid here';
  return { path: path.map(String).join('.'), problem };
}

/** The MCP schema of each request a client may send, by method (others: the SDK's -32601). */
const REQUEST_SCHEMAS: Readonly<Record<string, { '~standard': StandardSchema }>> = {
  initialize: specTypeSchemas.InitializeRequest,
  ping: specTypeSchemas.PingRequest,
  'server/discover': specTypeSchemas.DiscoverRequest,
  'tools/list': specTypeSchemas.ListToolsRequest,
  'tools/call': specTypeSchemas.CallToolRequest,
  'resources/list': specTypeSchemas.ListResourcesRequest,
  'resources/templates/list': specTypeSchemas.ListResourceTemplatesRequest,
  'resources/read': specTypeSchemas.ReadResourceRequest,
  'resources/subscribe': specTypeSchemas.SubscribeRequest,
  'resources/unsubscribe': specTypeSchemas.UnsubscribeRequest,
  'prompts/list': specTypeSchemas.ListPromptsRequest,
  'prompts/get': specTypeSchemas.GetPromptRequest,
  'completion/complete': specTypeSchemas.CompleteRequest,
  'logging/setLevel': specTypeSchemas.SetLevelRequest,
  'subscriptions/listen': specTypeSchemas.SubscriptionsListenRequest,
} as unknown as Record<string, { '~standard': StandardSchema }>;

/**
 * Methods the 2026-07-28 revision removed. In that era (a request whose `_meta` claims a
 * protocol version) they do not exist: the answer is -32601 (HTTP 404), whatever the params.
 * A valid one goes on to the SDK, which answers so — or, on a stdio connection pinned to the
 * 2025 era, serves it; one whose params the old schema refuses is answered -32601 here (the
 * SDK's legacy instance would answer with the schema library's words).
 */
const REMOVED_IN_2026: ReadonlySet<string> = new Set([
  'initialize',
  'ping',
  'logging/setLevel',
  'resources/subscribe',
  'resources/unsubscribe',
]);

const ENVELOPE = 'io.modelcontextprotocol/';

/** A request's `_meta` when it is an object. */
function metaOf(params: unknown): Record<string, unknown> | undefined {
  const meta = (params as { _meta?: unknown } | null | undefined)?._meta;
  return typeof meta === 'object' && meta !== null && !Array.isArray(meta)
    ? (meta as Record<string, unknown>)
    : undefined;
}

/** Whether a request's params carry the 2026-07-28 envelope (a protocol version in `_meta`). */
function claimsModernEra(params: unknown): boolean {
  return `${ENVELOPE}protocolVersion` in (metaOf(params) ?? {});
}

/** The 2026-07-28 envelope keys a request's `_meta` may carry, with their schemas. */
const ENVELOPE_KEYS: Readonly<Record<string, { '~standard': StandardSchema } | 'string'>> = {
  [`${ENVELOPE}protocolVersion`]: 'string',
  [`${ENVELOPE}clientInfo`]: specTypeSchemas.Implementation,
  [`${ENVELOPE}clientCapabilities`]: specTypeSchemas.ClientCapabilities,
  [`${ENVELOPE}logLevel`]: specTypeSchemas.LoggingLevel,
} as unknown as Record<string, { '~standard': StandardSchema } | 'string'>;

/**
 * What is wrong with a request's protocol envelope (`_meta` of the 2026-07-28 revision), in our
 * words: a claim (a protocol version) needs the client's capabilities, and each envelope key
 * its shape. (The SDK would answer with the schema library's message.)
 */
function envelopeProblem(params: unknown): string | undefined {
  const envelope = metaOf(params);
  if (envelope === undefined) return undefined;
  if (`${ENVELOPE}protocolVersion` in envelope && !(`${ENVELOPE}clientCapabilities` in envelope)) {
    return `Invalid params: params._meta needs ${ENVELOPE}clientCapabilities with ${ENVELOPE}protocolVersion`;
  }
  for (const [key, schema] of Object.entries(ENVELOPE_KEYS)) {
    if (!(key in envelope)) continue;
    const value = envelope[key];
    const bad =
      schema === 'string'
        ? typeof value !== 'string'
        : ((schema['~standard'].validate(value) as { issues?: readonly Issue[] }).issues?.length ??
            0) > 0;
    if (bad) return `Invalid params: params._meta.${key} is not valid here`;
  }
  return undefined;
}

interface StandardSchema {
  validate(value: unknown): { issues?: readonly Issue[] } | Promise<unknown>;
}

/**
 * The path of the first own `__proto__` key in a value (JSON.parse makes it an ordinary key).
 * The SDK's parse of a request turns such a key into the prototype of the copy it hands on, so
 * the core would never see it to refuse it like any other unknown key: it is refused here.
 */
function protoKeyPath(value: unknown): string[] | undefined {
  const stack: Array<[unknown, string[]]> = [[value, []]];
  while (stack.length > 0) {
    const [current, path] = stack.pop()!;
    if (typeof current !== 'object' || current === null) continue;
    if (Array.isArray(current)) {
      current.forEach((item, i) => stack.push([item, [...path, String(i)]]));
      continue;
    }
    if (Object.hasOwn(current, '__proto__')) return [...path, '__proto__'];
    for (const [key, item] of Object.entries(current)) stack.push([item, [...path, key]]);
  }
  return undefined;
}

/**
 * Checks one parsed message against the JSON-RPC framing and the MCP message schema. A request
 * that fails is answered (-32602 when its params are at fault, -32600 otherwise) with its id
 * when that id is a string or a safe integer, else with id null; an unreadable message (not an
 * object, a batch) is answered with id null; invalid notifications and responses are dropped,
 * as JSON-RPC requires.
 */
export function inspectMessage(value: unknown): Inspected {
  if (Array.isArray(value)) {
    const problem = 'Invalid Request: batches are not supported; send one message at a time';
    return { ok: false, problem, reply: rpcError(null, RPC.invalidRequest, problem) };
  }
  if (typeof value !== 'object' || value === null) {
    const problem = 'Invalid Request: a message must be a JSON object';
    return { ok: false, problem, reply: rpcError(null, RPC.invalidRequest, problem) };
  }
  const message = value as Record<string, unknown>;
  const request = asRequest(message);
  const isRequest = request !== undefined;
  const id = request?.id ?? null;
  const refuse = (code: number, problem: string): Inspected =>
    isRequest ? { ok: false, problem, reply: rpcError(id, code, problem) } : { ok: false, problem };
  if (message.jsonrpc !== '2.0') {
    return refuse(RPC.invalidRequest, 'Invalid Request: "jsonrpc" must be "2.0"');
  }
  if (isRequest && id === null) {
    return refuse(RPC.invalidRequest, 'Invalid Request: "id" must be a string or a safe integer');
  }
  if ((isRequest || !('id' in message)) && typeof message.method !== 'string') {
    return refuse(RPC.invalidRequest, 'Invalid Request: "method" must be a string');
  }
  const proto = protoKeyPath(message.params);
  if (proto !== undefined) {
    return refuse(
      RPC.invalidParams,
      `Invalid params: ${['params', ...proto].join('.')} is not an allowed key`,
    );
  }
  try {
    const parsed = parseJSONRPCMessage(message);
    // A request's params against its method's schema, here: the SDK would answer a mismatch
    // with the schema library's own JSON.
    // (Notifications too: over HTTP the SDK would answer even those with its own message.)
    const isResponse = 'result' in message || 'error' in message;
    const envelope = isResponse ? undefined : envelopeProblem(message.params);
    if (envelope !== undefined) return refuse(RPC.invalidParams, envelope);
    const method = message.method as string;
    // (Own keys only: a method named `constructor` is an unknown method, not Object's.)
    const schema =
      isRequest && Object.hasOwn(REQUEST_SCHEMAS, method) ? REQUEST_SCHEMAS[method] : undefined;
    if (schema !== undefined) {
      const checked = schema['~standard'].validate({
        method: message.method,
        params: message.params,
      });
      const issues = 'issues' in checked ? checked.issues : undefined;
      if (issues !== undefined && issues.length > 0) {
        if (REMOVED_IN_2026.has(method) && claimsModernEra(message.params)) {
          return refuse(
            RPC.methodNotFound,
            `Method not found: ${method} was removed in the 2026-07-28 revision`,
          );
        }
        const { path, problem } = describeIssue(issues);
        return refuse(RPC.invalidParams, `Invalid params: ${path || 'params'} ${problem}`);
      }
    }
    return { ok: true, message: parsed };
  } catch (error) {
    const { path, problem } = describeIssue((error as { issues?: Issue[] }).issues);
    const inParams = path === 'params' || path.startsWith('params.');
    return refuse(
      inParams ? RPC.invalidParams : RPC.invalidRequest,
      `${inParams ? 'Invalid params' : 'Invalid Request'}: ${path || 'the message'} ${problem}`,
    );
  }
}

/**
 * Parses one message's text (a single message or a batch): -32700 (id null) when it is not
 * JSON, -32600 when it nests too deeply (V8's JSON.parse is iterative, so the id can still be
 * read; what would recurse — validation, serialisation — never sees it).
 */
export function parseText(
  text: string,
): { ok: true; value: unknown } | Extract<Inspected, { ok: false }> {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    const problem = 'Parse error: the message is not valid JSON';
    return { ok: false, problem, reply: rpcError(null, RPC.parseError, problem) };
  }
  if (nestsDeeperThan(text)) {
    const problem = `Invalid Request: the message nests objects or arrays deeper than ${MAX_JSON_DEPTH} levels`;
    const message =
      typeof value === 'object' && value !== null && !Array.isArray(value)
        ? (value as Record<string, unknown>)
        : undefined;
    const isNotification = message !== undefined && !('id' in message) && 'method' in message;
    const isResponse = message !== undefined && ('result' in message || 'error' in message);
    if (isNotification || isResponse) return { ok: false, problem };
    const id = readableId(message?.id);
    return { ok: false, problem, reply: rpcError(id, RPC.invalidRequest, problem) };
  }
  return { ok: true, value };
}

/** Parses and inspects one message's text: {@link parseText}, then {@link inspectMessage}. */
export function inspectText(text: string): Inspected {
  const parsed = parseText(text);
  return parsed.ok ? inspectMessage(parsed.value) : parsed;
}
