/**
 * resources/list, resources/templates/list and resources/read. A read passes: the URI is
 * absolute → it names a resource → this caller's scope grants it → its target is inside the
 * allow-list → the handler runs under the deadline → the text is sanitised and budgeted.
 */
import { randomUUID } from 'node:crypto';
import {
  ProtocolError,
  ProtocolErrorCode,
  ResourceNotFoundError,
} from '@modelcontextprotocol/server';
import type { ReadResourceResult } from '@modelcontextprotocol/server';
import type { RequestContext, ResourceBody } from '../define.js';
import { paginate } from '../pagination.js';
import { sanitizeDeep, sanitizeText } from '../sanitize.js';
import type { SanitizeFlag } from '../sanitize.js';
import type { Connection } from './connection.js';
import { releaseAfterResponse, withDeadline } from './lifetime.js';
import { findResource, flatVariables, normalizeUri } from './prepare.js';
import { shapeResourceContents } from './results.js';

function contentFromBody(uri: string, body: ResourceBody): ReadResourceResult['contents'] {
  if ('contents' in body) return body.contents;
  if ('text' in body) {
    return [{ uri, text: body.text, ...(body.mimeType ? { mimeType: body.mimeType } : {}) }];
  }
  return [{ uri, blob: body.blob, ...(body.mimeType ? { mimeType: body.mimeType } : {}) }];
}

const described = (r: { title?: string; description?: string; mimeType?: string }) => ({
  ...(r.title === undefined ? {} : { title: r.title }),
  ...(r.description === undefined ? {} : { description: r.description }),
  ...(r.mimeType === undefined ? {} : { mimeType: r.mimeType }),
});

export function registerResources(connection: Connection, pageSize: number): void {
  const { server, runtime } = connection;
  const { resources } = connection.prepared;
  const { statics, templates } = resources;

  server.setRequestHandler('resources/list', async (request, sctx) => {
    const ctx = connection.contextFor(sctx, randomUUID(), sctx.mcpReq.signal);
    const listed: Array<Record<string, unknown> & { uri: string; name: string }> = [];
    for (const r of statics.values()) {
      if (connection.granted(r).allow) listed.push({ uri: r.uri, name: r.name, ...described(r) });
    }
    for (const { definition: t, template } of templates) {
      if (t.list === undefined || !connection.granted(t).allow) continue;
      for (const item of await t.list(ctx)) {
        // A listing shows only what a read would allow.
        const match = template.match(item.uri);
        const itemTarget = t.target?.(match === null ? {} : flatVariables(match));
        if (itemTarget !== undefined && !connection.allows(itemTarget)) continue;
        listed.push({ ...(t.mimeType === undefined ? {} : { mimeType: t.mimeType }), ...item });
      }
    }
    const clean = sanitizeDeep(listed, new Set());
    const { page, nextCursor } = paginate(clean, request.params?.cursor, pageSize);
    return nextCursor === undefined ? { resources: page } : { resources: page, nextCursor };
  });

  server.setRequestHandler('resources/templates/list', (request) => {
    const listed = templates
      .filter(({ definition: t }) => connection.granted(t).allow)
      .map(({ definition: t }) => ({ name: t.name, uriTemplate: t.uriTemplate, ...described(t) }));
    const { page, nextCursor } = paginate(listed, request.params?.cursor, pageSize);
    return nextCursor === undefined
      ? { resourceTemplates: page }
      : { resourceTemplates: page, nextCursor };
  });

  server.setRequestHandler('resources/read', async (request, sctx) => {
    const uri = request.params.uri;
    const attempt = connection.begin(sctx, 'resources/read', uri);
    const { eventId } = attempt;
    const normalized = normalizeUri(uri);
    if (normalized === undefined) {
      attempt.finish('invalid_params');
      throw new ProtocolError(
        ProtocolErrorCode.InvalidParams,
        'Invalid resource URI: expected an absolute URI',
        { uri: sanitizeText(uri).text.slice(0, 256), reason: 'invalid_uri' },
      );
    }
    const found = findResource(resources, uri, normalized);
    if (found === undefined) {
      attempt.finish('not_found');
      throw new ResourceNotFoundError(uri);
    }
    // Not listed, so not readable: answered exactly as a resource that does not exist.
    const scope = connection.granted(found.definition);
    if (!scope.allow) {
      attempt.finish('denied', { decision: scope });
      throw new ResourceNotFoundError(uri);
    }
    const target =
      found.kind === 'static'
        ? found.definition.target
        : found.definition.target?.(found.variables);
    if (target !== undefined) {
      const allowed = runtime.policy.targetAllowed(target);
      if (!allowed.allow) {
        attempt.finish('denied', { target, decision: allowed });
        throw new ProtocolError(ProtocolErrorCode.InvalidParams, `Denied: ${allowed.reason}`, {
          uri: sanitizeText(uri).text,
        });
      }
    }
    const read = (ctx: RequestContext): Promise<ResourceBody | undefined> =>
      found.kind === 'static'
        ? found.definition.read(ctx)
        : found.definition.read(uri, found.variables, ctx);
    const done = runtime.inflight?.enter();
    const flags = new Set<SanitizeFlag>();
    try {
      attempt.trace.stage('handler');
      const body = await attempt.trace.within(() =>
        withDeadline(runtime.toolTimeoutMs, connection.abortSources(sctx), (signal) =>
          read(connection.contextFor(sctx, eventId, signal)),
        ),
      );
      if (body === undefined) {
        attempt.finish('not_found', { target });
        throw new ResourceNotFoundError(uri);
      }
      const budget = runtime.maxOutputBytes ?? Infinity;
      const contents = shapeResourceContents(contentFromBody(uri, body), budget, flags);
      attempt.finish('ok', { target, flags, result: { contents } });
      return { contents };
    } catch (error) {
      if (error instanceof ResourceNotFoundError) throw error;
      throw attempt.fail(error, { target }).protocolError;
    } finally {
      releaseAfterResponse(done);
    }
  });
}
