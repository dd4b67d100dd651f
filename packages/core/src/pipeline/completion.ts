/**
 * completion/complete: candidate values for a prompt argument or a template variable. It goes
 * through the runner (runner.ts) like a read: found and granted as the listing shows it, a place
 * in the minute, the completer under the deadline; values from what this caller may see only
 * (the completers get the allow-list check), sanitised, capped.
 */
import type { CompleteRequest, CompleteResult } from '@modelcontextprotocol/server';
import type { Completer } from '../define.js';
import { sanitizeText } from '../sanitize.js';
import type { Connection } from './connection.js';
import { Refusal, unknownName } from './failures.js';
import { normalizeUri } from './prepare.js';
import { runRequest } from './runner.js';
import type { Adapter } from './runner.js';

const MAX_COMPLETIONS = 100;

export function registerCompletion(connection: Connection): void {
  connection.server.setRequestHandler('completion/complete', (request, sctx) =>
    runRequest(connection, sctx, completion(connection, request.params)),
  );
}

/** The completer of the argument, or none (a static resource has no variables). */
type Found = Completer | undefined;

function completion(
  connection: Connection,
  params: CompleteRequest['params'],
): Adapter<Found, readonly string[], CompleteResult> {
  const { ref, argument } = params;
  const { prompts, resources } = connection.prepared;
  const { principal, allows } = connection;
  const isPrompt = ref.type === 'ref/prompt';
  const subject = (label: string, item: { scope?: string | undefined }, parse: () => Found) => ({
    label,
    access: 'read' as const,
    deadlineMs: connection.runtime.toolTimeoutMs,
    visible: () => connection.granted(item),
    parse,
    targets: () => undefined,
  });
  return {
    method: 'completion/complete',
    name: isPrompt ? ref.name : ref.uri,
    args: { [argument.name]: argument.value },
    find: () => {
      if (ref.type === 'ref/prompt') {
        const prompt = prompts.get(ref.name);
        if (prompt === undefined) return undefined;
        return subject(prompt.name, prompt, () => {
          const declared = prompt.arguments ?? {};
          if (!Object.hasOwn(declared, argument.name)) {
            throw new Refusal(
              'invalid_params',
              `Prompt ${prompt.name} has no argument "${argument.name}"`,
            );
          }
          return declared[argument.name]!.complete;
        });
      }
      const t = resources.templates.find((x) => x.definition.uriTemplate === ref.uri);
      if (t !== undefined) {
        const complete = t.definition.complete ?? {};
        return subject(t.definition.name, t.definition, () =>
          Object.hasOwn(complete, argument.name) ? complete[argument.name] : undefined,
        );
      }
      const fixed = resources.statics.get(normalizeUri(ref.uri) ?? ref.uri);
      return fixed === undefined ? undefined : subject(fixed.name, fixed, () => undefined);
    },
    notFound: () =>
      isPrompt
        ? unknownName('prompt', ref.name)
        : `Unknown resource template: ${sanitizeText(ref.uri).text.slice(0, 256)}`,
    run: async (_, complete, { attempt, signal, deadline }) =>
      (await complete?.(argument.value, {
        arguments: params.context?.arguments ?? {},
        principal,
        allows,
        signal,
        deadline,
        credential: () => connection.credential(attempt),
      })) ?? [],
    shape: (_, values) => {
      const clean = values.map((v) => sanitizeText(v).text);
      const answer = {
        completion: {
          values: clean.slice(0, MAX_COMPLETIONS),
          total: clean.length,
          hasMore: clean.length > MAX_COMPLETIONS,
        },
      };
      return { reason: 'ok', result: answer, answer };
    },
    answer: (failure) => {
      throw failure.protocolError;
    },
  };
}
