/**
 * Human in the loop: a write asks the user to confirm, through elicitation, before it runs.
 * The answer comes back with HMAC-sealed request state that names exactly these arguments.
 */
import { sha256Canonical } from '@gatehouse/audit';
import { inputRequired, inputResponse } from '@modelcontextprotocol/server';
import type {
  CallToolResult,
  ClientCapabilities,
  InputRequiredResult,
  ServerContext,
} from '@modelcontextprotocol/server';
import { redactArgs } from '../audit.js';
import type { ToolDefinition } from '../define.js';
import type { Decision } from '../policy.js';
import { sanitizeText } from '../sanitize.js';
import type { Connection } from './connection.js';
import { toolErrorResult } from './failures.js';

const confirmationOf = (tool: ToolDefinition, args: unknown): string =>
  sha256Canonical({ tool: tool.name, args });

/** What the client declared it can do (the envelope's in the 2026-07-28 era). */
export function clientCapabilitiesOf(
  connection: Connection,
  sctx: ServerContext,
): ClientCapabilities | undefined {
  return connection.era === 'modern'
    ? ((sctx.mcpReq.envelope as Record<string, unknown> | undefined)?.[
        'io.modelcontextprotocol/clientCapabilities'
      ] as ClientCapabilities | undefined)
    : connection.server.getClientCapabilities();
}

/** Whether a write may run now: confirmed, to be asked, or refused (with the reason). */
function confirmation(
  connection: Connection,
  sctx: ServerContext,
  tool: ToolDefinition,
  args: unknown,
): 'confirmed' | 'ask' | { refusal: string } {
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
    if (answer.kind === 'elicit' && answer.action === 'accept' && answer.content?.confirm === true)
      return 'confirmed';
    return { refusal: 'The user did not confirm this write; nothing was sent.' };
  }
  const { runtime, era } = connection;
  const canAsk =
    clientCapabilitiesOf(connection, sctx)?.elicitation !== undefined &&
    (era === 'modern' || runtime.transport !== 'http');
  if (canAsk) return 'ask';
  if (runtime.confirmWrites?.fallback === 'proceed') return 'confirmed';
  return {
    refusal:
      "This write needs the user's confirmation, but this client cannot ask the user (no elicitation support, or a 2025-era client over stateless HTTP). Nothing was sent. Call it with dry_run: true to preview it, or ask the operator.",
  };
}

async function askToConfirm(
  connection: Connection,
  sctx: ServerContext,
  tool: ToolDefinition,
  args: unknown,
): Promise<InputRequiredResult> {
  return inputRequired({
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
    requestState: await connection.stateCodec.mint({ confirm: confirmationOf(tool, args) }, sctx),
  });
}

/**
 * The write-confirmation stage: `undefined` when the call may run; otherwise the answer to send
 * instead (the question to the user, or the refusal) and the decision to record.
 */
export async function confirmWrite(
  connection: Connection,
  sctx: ServerContext,
  tool: ToolDefinition,
  args: unknown,
  decision: Decision,
): Promise<
  | { reason: 'ok' | 'denied'; result: InputRequiredResult | CallToolResult; decision: Decision }
  | undefined
> {
  const gate = confirmation(connection, sctx, tool, args);
  if (gate === 'confirmed') return undefined;
  if (gate === 'ask') {
    return { reason: 'ok', result: await askToConfirm(connection, sctx, tool, args), decision };
  }
  return {
    reason: 'denied',
    result: toolErrorResult(gate.refusal),
    decision: { allow: false, rule: 'confirmation', reason: gate.refusal },
  };
}
