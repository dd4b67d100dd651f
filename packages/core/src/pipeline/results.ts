/**
 * What a tool returned, made into what the model reads: sanitised, within the size budget with
 * an honest marker, structured results checked against the output schema, dry runs checked and
 * framed as previews.
 */
import { isInputRequiredResult } from '@modelcontextprotocol/server';
import type {
  CallToolResult,
  ContentBlock,
  InputRequiredResult,
} from '@modelcontextprotocol/server';
import * as z from 'zod';
import type { DryRunPreview, StructuredToolResult, ToolDefinition } from '../define.js';
import { randomBytes } from 'node:crypto';
import {
  frameUntrusted,
  isJsonMediaType,
  sanitizeDeep,
  sanitizeJsonText,
  sanitizeText,
  truncateText,
} from '../sanitize.js';
import type { SanitizeFlag } from '../sanitize.js';
import { toolErrorResult } from './failures.js';
import { EVERY_STRING, frameMarked } from './frame-structured.js';
import type { PreparedTool } from './prepare.js';

/** `project`: a plain tool result the SDK still projects for the client's era and schema. */
export type ShapedResult =
  | { readonly reason: 'ok'; readonly result: CallToolResult; readonly project: true }
  | {
      readonly reason: 'ok' | 'tool_error';
      readonly result: CallToolResult | InputRequiredResult;
      readonly project: false;
    };

function isDryRunPreview(value: unknown): value is DryRunPreview {
  return (
    typeof value === 'object' && value !== null && (value as { dryRun?: unknown }).dryRun === true
  );
}

/**
 * Shapes a handler's result. Throws (a TypeError, classified as an internal error) when the
 * tool broke its contract: a preview for a real call, a real result for a dry run, structured
 * content that does not match the output schema.
 */
export function shapeToolResult(
  prepared: PreparedTool,
  result: Awaited<ReturnType<ToolDefinition['handler']>>,
  options: { dryRun: boolean; budget: number; flags: Set<SanitizeFlag> },
): ShapedResult {
  const { dryRun, budget, flags } = options;
  const tool = prepared.definition;
  // Structured content goes with a listed output schema (GATEHOUSE_STRUCTURED_OUTPUT), only.
  const withStructured = prepared.listing.outputSchema !== undefined;
  const name = tool.name;
  if (isInputRequiredResult(result)) {
    return { reason: 'ok', result: sanitizeDeep(result, flags), project: false };
  }
  const ok = (callResult: CallToolResult): ShapedResult => ({
    reason: 'ok',
    result: callResult,
    project: true,
  });
  if (isDryRunPreview(result)) {
    if (!dryRun) throw new TypeError(`${name} returned a dry-run preview for a real call`);
    const body = sanitizeDeep(result.wouldSend, flags);
    const summary = sanitizeText(result.summary, flags).text;
    // What would be sent holds third-party text too (a template's title prefix, a name looked
    // up): it is shown framed, as data, in both views.
    const nonce = randomBytes(6).toString('hex');
    return ok({
      content: [
        {
          type: 'text',
          text: truncateText(
            `DRY RUN — nothing was sent. ${summary}\nThis is exactly what would be sent:\n${frameUntrusted(JSON.stringify(body, null, 2), 'the request this server would send', nonce)}`,
            budget,
            flags,
          ),
        },
      ],
      // A tool with an output schema must return structured content; a dry run's is the preview.
      ...(!withStructured
        ? {}
        : {
            structuredContent: {
              dry_run: true,
              summary,
              would_send: frameMarked(body, EVERY_STRING, nonce),
            },
          }),
    });
  }
  if (dryRun) {
    throw new TypeError(
      `${name} ignored dry_run: it must return ctx.preview(...) without sending anything`,
    );
  }
  if (typeof result === 'string') {
    return ok({
      content: [
        { type: 'text', text: truncateText(sanitizeText(result, flags).text, budget, flags) },
      ],
    });
  }
  if ('structured' in result) {
    const structuredResult = result as StructuredToolResult<unknown>;
    const checked = tool.output?.safeParse(structuredResult.structured);
    if (checked !== undefined && !checked.success) {
      throw new TypeError(
        `structured result of ${name} does not match its output schema: ${z.prettifyError(checked.error)}`,
      );
    }
    if (!withStructured && structuredResult.text !== undefined) {
      // The model gets the text alone: only what is sent is sanitised and held to the budget.
      return ok({
        content: [
          {
            type: 'text',
            text: truncateText(sanitizeText(structuredResult.text, flags).text, budget, flags),
          },
        ],
      });
    }
    const clean = sanitizeDeep(structuredResult.structured as Record<string, unknown>, flags);
    // Every string a third party wrote is framed, as the text view frames it.
    const structured =
      prepared.framing === undefined
        ? clean
        : (frameMarked(clean, prepared.framing) as Record<string, unknown>);
    const json = JSON.stringify(structured);
    if (Buffer.byteLength(json) > budget) {
      flags.add('truncated');
      return {
        reason: 'tool_error',
        result: toolErrorResult(
          `The result of ${name} is ${Buffer.byteLength(json)} bytes, over its ${budget}-byte budget. Narrow the request (filters, limits, fewer fields).`,
        ),
        project: false,
      };
    }
    const text =
      structuredResult.text === undefined
        ? json
        : truncateText(sanitizeText(structuredResult.text, flags).text, budget, flags);
    return ok({
      content: [{ type: 'text', text }],
      ...(withStructured ? { structuredContent: structured } : {}),
    });
  }
  return ok({ content: budgetContent(cleanContent(result.content, flags), budget, flags) });
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

/**
 * A resource's text as a client reads it: a JSON text (by its media type) cleaned as the values
 * it holds, any other text as text.
 */
function cleanResourceText(text: string, mimeType: string | undefined, flags: Set<SanitizeFlag>) {
  return isJsonMediaType(mimeType) ? sanitizeJsonText(text, flags) : sanitizeText(text, flags).text;
}

/** Resource texts: sanitised and cut to the budget; blobs pass as they are. */
export function shapeResourceContents<
  C extends { text: string; mimeType?: string | undefined } | { blob: string },
>(contents: readonly C[], budget: number, flags: Set<SanitizeFlag>): C[] {
  return contents.map((c) =>
    'text' in c
      ? { ...c, text: truncateText(cleanResourceText(c.text, c.mimeType, flags), budget, flags) }
      : c,
  );
}

/** Content blocks sanitised; an embedded resource's text as its media type says. */
function cleanContent(content: ContentBlock[], flags: Set<SanitizeFlag>): ContentBlock[] {
  return content.map((block) => {
    if (block.type !== 'resource' || !('text' in block.resource)) return sanitizeDeep(block, flags);
    const { text, ...rest } = block.resource;
    const clean = sanitizeDeep({ ...block, resource: rest }, flags);
    return {
      ...clean,
      resource: { ...clean.resource, text: cleanResourceText(text, rest.mimeType, flags) },
    };
  });
}
