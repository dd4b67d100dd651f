/**
 * prompts/list and prompts/get. A get goes through the runner (runner.ts) like a tool call: the
 * prompt exists and this caller's scope grants it, its arguments are the declared ones and
 * valid, its targets are inside the allow-list, it takes a place in the minute, the handler runs
 * under the deadline, the messages are sanitised.
 */
import type { GetPromptResult } from '@modelcontextprotocol/server';
import type { PromptDefinition, PromptHandlerResult } from '../define.js';
import { paginate } from '../pagination.js';
import { sanitizeDeep } from '../sanitize.js';
import type { Connection } from './connection.js';
import { Refusal, unknownName } from './failures.js';
import { runRequest } from './runner.js';
import type { Adapter } from './runner.js';

export function registerPrompts(connection: Connection, pageSize: number): void {
  const { server } = connection;
  const { prompts } = connection.prepared;

  server.setRequestHandler('prompts/list', (request) => {
    const listed = [...prompts.values()]
      .filter((p) => connection.granted(p).allow)
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
    const clean = sanitizeDeep(listed, new Set());
    const { page, nextCursor } = paginate(clean, request.params?.cursor, pageSize);
    return nextCursor === undefined ? { prompts: page } : { prompts: page, nextCursor };
  });

  server.setRequestHandler('prompts/get', (request, sctx) => {
    const { name, arguments: given = {} } = request.params;
    return runRequest(connection, sctx, promptGet(connection, name, given));
  });
}

/** prompts/get as the runner sees it: every failure answers as a JSON-RPC error. */
function promptGet(
  connection: Connection,
  name: string,
  given: Readonly<Record<string, string>>,
): Adapter<Readonly<Record<string, string>>, PromptHandlerResult, GetPromptResult> {
  return {
    method: 'prompts/get',
    name,
    args: given,
    find: () => {
      const prompt = connection.prepared.prompts.get(name);
      if (prompt === undefined) return undefined;
      return {
        label: prompt.name,
        access: 'read',
        deadlineMs: connection.runtime.toolTimeoutMs,
        visible: () => connection.granted(prompt),
        parse: () => {
          const problem = checkPromptArguments(prompt, given);
          if (problem !== undefined) throw new Refusal('invalid_params', problem);
          return given;
        },
        targets: (args) => prompt.target?.(args),
      };
    },
    notFound: () => unknownName('prompt', name),
    run: (subject, args, { attempt, signal, deadline }) => {
      const prompt = connection.prepared.prompts.get(subject.label)!;
      const ctx = connection.contextFor(attempt, signal, deadline);
      return prompt.handler(args, ctx);
    },
    shape: (_, result, __, flags) => {
      const body = sanitizeDeep(Array.isArray(result) ? { messages: result } : result, flags);
      return { reason: 'ok', result: body, answer: body as GetPromptResult };
    },
    answer: (failure) => {
      throw failure.protocolError;
    },
  };
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
