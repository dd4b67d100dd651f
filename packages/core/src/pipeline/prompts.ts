/**
 * prompts/list and prompts/get. A get passes: the prompt exists and this caller's scope grants
 * it → its arguments are the declared ones and valid → the handler runs under the deadline →
 * the messages are sanitised.
 */
import { ProtocolError, ProtocolErrorCode } from '@modelcontextprotocol/server';
import type { PromptDefinition } from '../define.js';
import { ToolError } from '../errors.js';
import { paginate } from '../pagination.js';
import { sanitizeDeep } from '../sanitize.js';
import type { SanitizeFlag } from '../sanitize.js';
import type { Connection } from './connection.js';
import { unknownName } from './failures.js';
import { releaseAfterResponse, withDeadline } from './lifetime.js';

export function registerPrompts(connection: Connection, pageSize: number): void {
  const { server, runtime } = connection;
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
    const { page, nextCursor } = paginate(listed, request.params?.cursor, pageSize);
    return nextCursor === undefined ? { prompts: page } : { prompts: page, nextCursor };
  });

  server.setRequestHandler('prompts/get', async (request, sctx) => {
    const { name, arguments: given = {} } = request.params;
    const attempt = connection.begin(sctx, 'prompts/get', name, given);
    const { eventId } = attempt;
    const prompt = prompts.get(name);
    if (prompt === undefined) {
      attempt.finish('not_found');
      throw unknownName('prompt', name);
    }
    const scope = connection.granted(prompt);
    if (!scope.allow) {
      attempt.finish('denied', { decision: scope });
      throw unknownName('prompt', name);
    }
    const problem = checkPromptArguments(prompt, given);
    if (problem !== undefined) {
      attempt.finish('invalid_params', { error: new ToolError(problem) });
      throw new ProtocolError(ProtocolErrorCode.InvalidParams, problem);
    }
    const done = runtime.inflight?.enter();
    const flags = new Set<SanitizeFlag>();
    try {
      attempt.trace.stage('handler');
      const result = await attempt.trace.within(() =>
        withDeadline(runtime.toolTimeoutMs, connection.abortSources(sctx), (signal) =>
          prompt.handler(given, connection.contextFor(sctx, eventId, signal)),
        ),
      );
      const body = sanitizeDeep(Array.isArray(result) ? { messages: result } : result, flags);
      attempt.finish('ok', { flags, result: body });
      return body;
    } catch (error) {
      throw attempt.fail(error).protocolError;
    } finally {
      releaseAfterResponse(done);
    }
  });
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
