/**
 * completion/complete: candidate values for a prompt argument or a template variable, from
 * what this caller may see only (the completers get the allow-list check), sanitised, capped.
 */
import { ProtocolError, ProtocolErrorCode } from '@modelcontextprotocol/server';
import { sanitizeText } from '../sanitize.js';
import type { Connection } from './connection.js';
import { unknownName } from './failures.js';
import { normalizeUri } from './prepare.js';

const MAX_COMPLETIONS = 100;

export function registerCompletion(connection: Connection): void {
  const { server, principal, allows } = connection;
  const { prompts, resources } = connection.prepared;

  server.setRequestHandler('completion/complete', async (request) => {
    const { ref, argument } = request.params;
    const context = { arguments: request.params.context?.arguments ?? {}, principal, allows };
    let values: readonly string[];
    if (ref.type === 'ref/prompt') {
      const prompt = prompts.get(ref.name);
      if (prompt === undefined || !connection.granted(prompt).allow) {
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
      const t = resources.templates.find(
        (x) => x.definition.uriTemplate === ref.uri && connection.granted(x.definition).allow,
      );
      if (t === undefined) {
        const fixed = resources.statics.get(normalizeUri(ref.uri) ?? ref.uri);
        if (fixed !== undefined && connection.granted(fixed).allow) {
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
