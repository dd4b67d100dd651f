/**
 * tools/list and tools/call. A call goes through the runner (runner.ts): this file supplies how
 * a tool is found, parsed, confirmed, run with its context (progress, logs, previews) and
 * shaped, and that refusals answer as tool errors the model can act on.
 */
import { inputRequired } from '@modelcontextprotocol/server';
import type {
  CallToolResult,
  InputRequiredResult,
  ServerContext,
} from '@modelcontextprotocol/server';
import * as z from 'zod';
import type { DryRunPreview, ToolContext, ToolDefinition } from '../define.js';
import { paginate } from '../pagination.js';
import { sanitizeDeep, sanitizeText } from '../sanitize.js';
import { clientCapabilitiesOf, confirmWrite } from './confirm.js';
import type { Connection } from './connection.js';
import { refuseBoundArguments, resolveBound } from './bound.js';
import { Refusal, unknownName } from './failures.js';
import { ConnectRequiredError } from '../identity/grant.js';
import type { PreparedTool } from './prepare.js';
import { shapeToolResult } from './results.js';
import { runRequest } from './runner.js';
import type { Adapter, Call } from './runner.js';

const NONE: Readonly<Record<string, unknown>> = Object.freeze({});

export function registerTools(connection: Connection, pageSize: number): void {
  const { server } = connection;
  const { tools } = connection.prepared;

  server.setRequestHandler('tools/list', (request) => {
    const listed = tools.filter((t) => connection.visible(t).allow).map((t) => t.listing);
    const { page, nextCursor } = paginate(listed, request.params?.cursor, pageSize);
    return nextCursor === undefined ? { tools: page } : { tools: page, nextCursor };
  });

  server.setRequestHandler('tools/call', (request, sctx) => {
    const { name, arguments: given = {} } = request.params;
    return runRequest(connection, sctx, toolCall(connection, sctx, name, given));
  });
}

type Args = {
  args: Record<string, unknown>;
  dryRun: boolean;
  /** The bound parameters: as the handler takes them, and as read (hashed in the record). */
  bound: Readonly<Record<string, unknown>>;
  boundRaw?: Readonly<Record<string, string>>;
};

/** tools/call as the runner sees it: refusals and failures answer as tool errors. */
function toolCall(
  connection: Connection,
  sctx: ServerContext,
  name: string,
  given: Record<string, unknown>,
): Adapter<
  Args,
  Awaited<ReturnType<ToolDefinition['handler']>>,
  CallToolResult | InputRequiredResult
> {
  const { server, runtime } = connection;
  return {
    method: 'tools/call',
    name,
    args: given,
    find: () => {
      const prepared = connection.prepared.toolsByName.get(name);
      if (prepared === undefined) return undefined;
      const tool = prepared.definition;
      return {
        label: tool.name,
        access: tool.access,
        tool: prepared,
        deadlineMs: tool.deadlineMs ?? runtime.toolTimeoutMs,
        visible: () => connection.visible(prepared),
        parse: () => {
          const bound = tool.bound ?? [];
          // Before the schema, whose "unknown key" would not say why: a bound name is the caller's.
          if (bound.length > 0) refuseBoundArguments(tool.name, bound, given);
          const parsed = prepared.input.safeParse(given);
          if (!parsed.success) {
            const text = `Invalid arguments for ${tool.name}:\n${z.prettifyError(parsed.error)}`;
            throw new Refusal('invalid_params', text);
          }
          const { dry_run: dryRun, ...args } = parsed.data as { dry_run?: boolean };
          if (bound.length === 0) return { args, dryRun: dryRun === true, bound: NONE };
          const { raw, values } = resolveBound(tool.name, bound, connection.principal);
          return { args, dryRun: dryRun === true, bound: values, boundRaw: raw };
        },
        bound: ({ boundRaw }) => boundRaw,
        targets: ({ args }) => tool.target?.(args),
      };
    },
    notFound: () => unknownName('tool', name),
    confirm: async (subject, { args, dryRun }, decision, attempt) => {
      const tool = subject.tool!.definition;
      if (tool.access !== 'write' || dryRun || runtime.confirmWrites === undefined)
        return undefined;
      attempt.trace.stage('confirm');
      const gate = await confirmWrite(connection, sctx, tool, args, decision);
      return gate === undefined ? undefined : { ...gate, answer: gate.result };
    },
    run: (subject, { args, dryRun, bound }, call) =>
      runHandler(connection, sctx, call, subject.tool!, args, dryRun, bound),
    shape: (subject, result, { dryRun }, flags) => {
      const prepared = subject.tool!;
      const budget =
        prepared.definition.maxOutputBytes ?? runtime.maxOutputBytes ?? Number.POSITIVE_INFINITY;
      const shaped = shapeToolResult(prepared, result, { dryRun, budget, flags });
      return {
        reason: shaped.reason,
        result: shaped.result,
        answer: shaped.project
          ? server.projectCallToolResult(shaped.result, prepared.listing.outputSchema)
          : shaped.result,
      };
    },
    answer: (failure) => {
      if (failure.toolResult === undefined) throw failure.protocolError;
      return failure.toolResult;
    },
  };
}

/** Runs the handler under its deadline with the tool context: progress, logs, previews. */
async function runHandler(
  connection: Connection,
  sctx: ServerContext,
  { attempt, signal, deadline, flags }: Call,
  prepared: PreparedTool,
  args: Record<string, unknown>,
  dryRun: boolean,
  bound: Readonly<Record<string, unknown>>,
): ReturnType<ToolDefinition['handler']> {
  const tool = prepared.definition;
  const progressToken = sctx.mcpReq._meta?.progressToken;
  let lastProgress = Number.NEGATIVE_INFINITY;
  // Progress and logs after the answer would reach the client out of order: dropped.
  let finished = false;
  try {
    const ctx: ToolContext = Object.assign(connection.contextFor(attempt, signal, deadline, tool), {
      dryRun,
      bound,
      preview: (wouldSend: unknown, summary: string): DryRunPreview => ({
        dryRun: true,
        summary,
        wouldSend,
      }),
      progress: async (progress: number, total?: number, message?: string) => {
        if (progressToken === undefined || finished || signal.aborted || progress <= lastProgress)
          return;
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
        if (!finished && !signal.aborted) await sctx.mcpReq.log(level, sanitizeDeep(data, flags));
      },
    });
    try {
      return await tool.handler(args, ctx);
    } catch (error) {
      // Asking the person to connect is an answer, recorded as one (input required), as a
      // write's confirmation question is; where it cannot be asked, the denial names the link.
      const asking =
        error instanceof ConnectRequiredError && error.link !== undefined
          ? connectAnswer(connection, sctx, error.link)
          : undefined;
      if (asking === undefined) throw error;
      return asking;
    }
  } finally {
    finished = true;
  }
}

/**
 * The link to connect, as a URL elicitation the client shows its user (ADR 0026): an
 * input-required result in the 2026-07-28 era, to a client that declared URL elicitation.
 * Undefined otherwise, and the tool error names the link: a 2025-era request over stateless HTTP
 * is a fresh session whose client declared nothing the server can see, and a server may not send
 * a mode the client did not declare (so no -32042 either); identity is refused over stdio.
 */
function connectAnswer(
  connection: Connection,
  sctx: ServerContext,
  link: NonNullable<ConnectRequiredError['link']>,
): InputRequiredResult | undefined {
  if (connection.era !== 'modern') return undefined;
  if (clientCapabilitiesOf(connection, sctx)?.elicitation?.url === undefined) return undefined;
  const vendor = connection.prepared.definition.identity?.vendor ?? 'the upstream service';
  const message = `Connect your ${vendor} account to continue: this server acts on ${vendor} as you, never as a shared account.`;
  return inputRequired({
    inputRequests: { connect: inputRequired.elicitUrl({ message, url: link.url }) },
  });
}
