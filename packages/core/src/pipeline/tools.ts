/**
 * tools/list and tools/call. A call passes, in order: the tool exists and this caller may see it
 * → the audit trail can record it → its arguments parse → every target is inside the allow-list
 * → a write carries no secret → a rate/concurrency slot → the user confirms a write → the handler runs under its deadline →
 * the result is shaped. Every exit writes exactly one audit record.
 */
import type { ServerContext } from '@modelcontextprotocol/server';
import * as z from 'zod';
import type { DryRunPreview, ToolContext, ToolDefinition } from '../define.js';
import { ToolError } from '../errors.js';
import { paginate } from '../pagination.js';
import { secretKinds } from '../secrets.js';
import { sanitizeDeep, sanitizeText } from '../sanitize.js';
import type { SanitizeFlag } from '../sanitize.js';
import { confirmWrite } from './confirm.js';
import type { Attempt, Connection } from './connection.js';
import { toolErrorResult, unknownName } from './failures.js';
import { releaseAfterResponse, withDeadline } from './lifetime.js';
import type { PreparedTool } from './prepare.js';
import { shapeToolResult } from './results.js';

export function registerTools(connection: Connection, pageSize: number): void {
  const { server, runtime } = connection;
  const { tools, toolsByName } = connection.prepared;
  const { policy, logger } = runtime;

  server.setRequestHandler('tools/list', (request) => {
    const listed = tools.filter((t) => connection.visible(t).allow).map((t) => t.listing);
    const { page, nextCursor } = paginate(listed, request.params?.cursor, pageSize);
    return nextCursor === undefined ? { tools: page } : { tools: page, nextCursor };
  });

  server.setRequestHandler('tools/call', async (request, sctx) => {
    const { name, arguments: given = {} } = request.params;
    const attempt = connection.begin(sctx, 'tools/call', name, given);
    const prepared = (attempt.tool = toolsByName.get(name));
    if (prepared === undefined) return reject(attempt, 'not_found', unknownName('tool', name));
    const tool = prepared.definition;
    const decision = connection.visible(prepared);
    // Not listed, so not callable: answered exactly as a tool that does not exist.
    if (!decision.allow) return reject(attempt, 'denied', unknownName('tool', name), { decision });
    const refusal = auditRefusal(connection, tool);
    if (refusal !== undefined) return refuse(attempt, 'audit_unavailable', refusal, { decision });

    const parsed = prepared.input.safeParse(given);
    if (!parsed.success) {
      const text = `Invalid arguments for ${name}:\n${z.prettifyError(parsed.error)}`;
      const error = new ToolError(text, { code: 'invalid_params' });
      return refuse(attempt, 'invalid_params', text, { decision, error });
    }
    const { dry_run: dryRunArg, ...args } = parsed.data as { dry_run?: boolean };
    const dryRun = dryRunArg === true;
    const declared = declaredTargets(tool, args, attempt, logger);
    if ('refused' in declared) return declared.refused;
    const { targets } = declared;
    const target = targets.length === 0 ? undefined : targets.join(' ');
    for (const t of targets) {
      const allowed = policy.targetAllowed(t);
      if (!allowed.allow) {
        const text = `Denied: ${allowed.reason}. Pick an allowed target.`;
        return refuse(attempt, 'denied', text, { target, decision: allowed });
      }
    }
    // A write never carries a secret out (a token, a key, a configured secret's value).
    const secrets = tool.access === 'write' ? secretKinds(args) : [];
    if (secrets.length > 0) {
      const text = `Refused: the arguments of ${name} carry what looks like a secret (${secrets.join(', ')}). Nothing was sent; remove it and call again.`;
      const leak = { allow: false, rule: 'outgoing_secret', reason: text } as const;
      return refuse(attempt, 'denied', text, { target, decision: leak });
    }
    attempt.trace.stage('rate_limit');
    const slot = (await runtime.limits?.acquire(connection.principal, tool)) ?? (() => undefined);
    if (typeof slot !== 'function') {
      const limit = { allow: false, rule: slot.rule, reason: slot.message };
      return refuse(attempt, 'rate_limited', slot.message, { target, decision: limit });
    }

    const done = runtime.inflight?.enter();
    const flags = new Set<SanitizeFlag>();
    try {
      if (tool.access === 'write' && !dryRun && runtime.confirmWrites !== undefined) {
        attempt.trace.stage('confirm');
        const gate = await confirmWrite(connection, sctx, tool, args, decision);
        if (gate !== undefined) {
          attempt.finish(gate.reason, { target, decision: gate.decision, result: gate.result });
          return gate.result;
        }
      }
      attempt.trace.stage('handler');
      const result = await attempt.trace.within(() =>
        runHandler(connection, sctx, attempt, prepared, args, dryRun, flags),
      );
      attempt.trace.stage('result');
      const budget = tool.maxOutputBytes ?? runtime.maxOutputBytes ?? Number.POSITIVE_INFINITY;
      const shaped = shapeToolResult(prepared, result, { dryRun, budget, flags });
      attempt.finish(shaped.reason, { target, decision, flags, result: shaped.result });
      return shaped.project
        ? server.projectCallToolResult(shaped.result, prepared.listing.outputSchema)
        : shaped.result;
    } catch (error) {
      const { toolResult } = attempt.fail(error, { target, decision, flags });
      if (toolResult === undefined) throw error;
      return toolResult;
    } finally {
      slot();
      releaseAfterResponse(done);
    }
  });
}

type Outcome = Parameters<Attempt['finish']>[1];

/** Ends the attempt with a JSON-RPC error. */
function reject(
  attempt: Attempt,
  reason: 'not_found' | 'denied',
  error: Error,
  outcome?: Outcome,
): never {
  attempt.finish(reason, outcome);
  throw error;
}

/** Ends the attempt with a tool error the model can act on. */
function refuse(
  attempt: Attempt,
  reason: Parameters<Attempt['finish']>[0],
  text: string,
  outcome: Outcome,
): ReturnType<typeof toolErrorResult> {
  const result = toolErrorResult(text);
  attempt.finish(reason, { ...outcome, result });
  return result;
}

/** Why calls are refused while the audit trail cannot be written, if they are. */
function auditRefusal(connection: Connection, tool: ToolDefinition): string | undefined {
  const { audit, auditFailureMode: mode = 'refuse_writes' } = connection.runtime;
  if (audit.failures.size === 0 || mode === 'continue') return undefined;
  if (mode === 'refuse_writes' && tool.access !== 'write') return undefined;
  const [sink, error] = [...audit.failures.entries()][0]!;
  const code = (error as NodeJS.ErrnoException).code ?? error.name;
  return `Refused: the audit trail cannot be written (${sink}: ${code}), so ${mode === 'refuse_all' ? 'no tool runs' : 'write tools are disabled'} until it recovers. Nothing was changed; tell the operator.`;
}

/** The targets the tool declares for these arguments, or the tool error when it throws. */
function declaredTargets(
  tool: ToolDefinition,
  args: Record<string, unknown>,
  attempt: Attempt,
  logger: Connection['runtime']['logger'],
): { targets: readonly string[] } | { refused: ReturnType<typeof toolErrorResult> } {
  try {
    const declared = tool.target?.(args);
    return {
      targets: declared === undefined ? [] : typeof declared === 'string' ? [declared] : declared,
    };
  } catch (error) {
    const { eventId } = attempt;
    logger.error({ err: error, tool: tool.name, eventId }, 'tool target function threw');
    const text = `${tool.name} could not determine its target (incident ${eventId}).`;
    return { refused: refuse(attempt, 'internal_error', text, { error }) };
  }
}

/** Runs the handler under its deadline with the tool context: progress, logs, previews. */
async function runHandler(
  connection: Connection,
  sctx: ServerContext,
  attempt: Attempt,
  prepared: PreparedTool,
  args: Record<string, unknown>,
  dryRun: boolean,
  flags: Set<SanitizeFlag>,
): ReturnType<ToolDefinition['handler']> {
  const tool = prepared.definition;
  const deadlineMs = tool.deadlineMs ?? connection.runtime.toolTimeoutMs;
  const deadline = Date.now() + deadlineMs;
  const progressToken = sctx.mcpReq._meta?.progressToken;
  let lastProgress = Number.NEGATIVE_INFINITY;
  // Progress and logs after the answer would reach the client out of order: dropped.
  let finished = false;
  try {
    return await withDeadline(deadlineMs, connection.abortSources(sctx), (signal) => {
      const ctx: ToolContext = Object.assign(
        connection.contextFor(sctx, attempt.eventId, signal, deadline),
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
  } finally {
    finished = true;
  }
}
