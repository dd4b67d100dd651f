/**
 * resources/list, resources/templates/list and resources/read. A read goes through the runner
 * (runner.ts): the URI is absolute and names a resource this caller's scope grants, its target
 * is inside the allow-list, it takes a place in the minute, the handler runs under the deadline,
 * the text (and each URI it names) is sanitised and budgeted. A listing that calls a template's
 * list() (a catalog query, a vendor call) goes through the runner too: every method that can
 * reach a database or a vendor takes a place in the minute, runs under the deadline and leaves
 * one audit record.
 */
import type { ListResourcesResult, ReadResourceResult } from '@modelcontextprotocol/server';
import type { ResourceBody } from '../define.js';
import { cursorShape, INVALID_CURSOR, paginate } from '../pagination.js';
import { sanitizeDeep, sanitizeText } from '../sanitize.js';
import type { SanitizeFlag } from '../sanitize.js';
import type { Connection } from './connection.js';
import { Refusal } from './failures.js';
import { findResource, flatVariables, normalizeUri } from './prepare.js';
import { shapeResourceContents } from './results.js';
import { runRequest } from './runner.js';
import type { Adapter } from './runner.js';

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
  const { server } = connection;
  const { templates } = connection.prepared.resources;

  server.setRequestHandler('resources/list', (request, sctx) => {
    const cursor = request.params?.cursor;
    const listing = templates.filter(
      ({ definition: t }) => t.list !== undefined && connection.granted(t).allow,
    );
    // A listing that calls no server's list() reaches nothing: answered like tools/list.
    if (listing.length === 0) return resourcePage(staticsListed(connection), cursor, pageSize);
    return runRequest(connection, sctx, resourceList(connection, listing, cursor, pageSize));
  });

  server.setRequestHandler('resources/templates/list', (request) => {
    const listed = templates
      .filter(({ definition: t }) => connection.granted(t).allow)
      .map(({ definition: t }) => ({ name: t.name, uriTemplate: t.uriTemplate, ...described(t) }));
    const { page, nextCursor } = paginate(
      sanitizeDeep(listed, new Set()),
      request.params?.cursor,
      pageSize,
    );
    return nextCursor === undefined
      ? { resourceTemplates: page }
      : { resourceTemplates: page, nextCursor };
  });

  server.setRequestHandler('resources/read', (request, sctx) =>
    runRequest(connection, sctx, resourceRead(connection, request.params.uri)),
  );
}

type Listed = Record<string, unknown> & { uri: string; name: string };
type Templates = Connection['prepared']['resources']['templates'];

/** The static resources this caller's scope grants. */
function staticsListed(connection: Connection): Listed[] {
  return [...connection.prepared.resources.statics.values()]
    .filter((r) => connection.granted(r).allow)
    .map((r) => ({ uri: r.uri, name: r.name, ...described(r) }));
}

function resourcePage(
  listed: readonly Listed[],
  cursor: string | undefined,
  pageSize: number,
  flags: Set<SanitizeFlag> = new Set(),
): ListResourcesResult {
  const { page, nextCursor } = paginate(sanitizeDeep(listed, flags), cursor, pageSize);
  return nextCursor === undefined ? { resources: page } : { resources: page, nextCursor };
}

/**
 * resources/list when a template lists its resources (a catalog query, a vendor call): through
 * the runner like a read — a place in the minute, the deadline, one audit record.
 */
function resourceList(
  connection: Connection,
  listing: Templates,
  cursor: string | undefined,
  pageSize: number,
): Adapter<string | undefined, Listed[], ListResourcesResult> {
  return {
    method: 'resources/list',
    name: 'resources/list',
    ...(cursor === undefined ? {} : { args: { cursor } }),
    find: () => ({
      label: 'resources/list',
      access: 'read',
      deadlineMs: connection.runtime.toolTimeoutMs,
      visible: () => connection.granted(listing[0]!.definition),
      parse: () => {
        // A cursor that cannot be one is refused before anything is asked of upstream.
        if (cursor !== undefined && !cursorShape(cursor)) {
          throw new Refusal('invalid_params', INVALID_CURSOR);
        }
        return cursor;
      },
      targets: () => undefined,
    }),
    notFound: () => 'Resource listing not available',
    run: async (_, __, { attempt, signal, deadline }) => {
      const ctx = connection.contextFor(attempt, signal, deadline);
      const listed = staticsListed(connection);
      for (const { definition: t, template } of listing) {
        for (const item of await t.list!(ctx)) {
          // A listing shows only what a read would allow.
          const match = template.match(item.uri);
          const itemTarget = t.target?.(match === null ? {} : flatVariables(match));
          if (itemTarget !== undefined && !connection.allows(itemTarget)) continue;
          listed.push({ ...(t.mimeType === undefined ? {} : { mimeType: t.mimeType }), ...item });
        }
      }
      return listed;
    },
    shape: (_, listed, given, flags) => {
      const result = resourcePage(listed, given, pageSize, flags);
      return { reason: 'ok', result, answer: result };
    },
    answer: (failure) => {
      throw failure.protocolError;
    },
  };
}

type Found = NonNullable<ReturnType<typeof findResource>>;

/** resources/read as the runner sees it: every failure answers as a JSON-RPC error. */
function resourceRead(
  connection: Connection,
  uri: string,
): Adapter<Found, ResourceBody | undefined, ReadResourceResult> {
  const { runtime } = connection;
  return {
    method: 'resources/read',
    name: uri,
    find: () => {
      const normalized = normalizeUri(uri);
      if (normalized === undefined) {
        throw new Refusal(
          'invalid_params',
          'Invalid resource URI: expected an absolute URI',
          undefined,
          {
            uri: sanitizeText(uri).text.slice(0, 256),
            reason: 'invalid_uri',
          },
        );
      }
      const found = findResource(connection.prepared.resources, uri, normalized);
      if (found === undefined) return undefined;
      return {
        label: found.definition.name,
        access: 'read',
        deadlineMs: runtime.toolTimeoutMs,
        // Not listed, so not readable: answered exactly as a resource that does not exist.
        visible: () => connection.granted(found.definition),
        parse: () => found,
        targets: (f) =>
          f.kind === 'static' ? f.definition.target : f.definition.target?.(f.variables),
      };
    },
    notFound: () => 'Resource not found',
    run: (_, found, { attempt, signal, deadline }) => {
      const ctx = connection.contextFor(attempt, signal, deadline);
      return found.kind === 'static'
        ? found.definition.read(ctx)
        : found.definition.read(uri, found.variables, ctx);
    },
    shape: (_, body, __, flags) => {
      if (body === undefined) throw new Refusal('not_found', 'Resource not found');
      const budget = runtime.maxOutputBytes ?? Infinity;
      // The URI each content names is echoed to the caller: sanitised like any text.
      const contents = shapeResourceContents(
        contentFromBody(uri, body).map((c) => ({ ...c, uri: sanitizeText(c.uri).text })),
        budget,
        flags,
      );
      return { reason: 'ok', result: { contents }, answer: { contents } };
    },
    answer: (failure) => {
      throw failure.protocolError;
    },
  };
}
