import type { Client, SendRequestOptions } from 'jira.js/core';

/**
 * jira.js's requests, sent through the fetch the kit hands us (ADR 0018). jira.js 6 takes no
 * fetch, timeout or signal, but its API functions take any `Client` — anything with
 * `sendRequest` — and only ever call that. This is that client: the URL and body written as
 * jira.js's own client writes them (`serializeSearchParams.js`, `bodyToFetchBody.js`: an array
 * repeats its key, other values are strings or JSON; a body is JSON), the answer checked against
 * the schema jira.js passes, and a failure thrown as {@link JiraHttpError} with Jira's status,
 * body and headers for the server's error mapping. No process-wide state: the fetch is this
 * client's own.
 */

/** Jira answered with a status other than 2xx. */
export class JiraHttpError extends Error {
  override readonly name = 'JiraHttpError';
  constructor(
    readonly status: number,
    readonly body: unknown,
    readonly headers: Record<string, string>,
  ) {
    super(`Jira answered ${status}`);
  }
}

/** An answer whose shape differs from the schema jira.js declares for it. */
export interface SchemaMismatch {
  readonly endpoint: string;
  readonly issues: readonly unknown[];
}

export interface TransportOptions {
  /** The site, e.g. https://acme.atlassian.net (no trailing slash). */
  readonly host: string;
  /** The Authorization header's value (read per request: a person's token is renewed). */
  readonly authorization: string | (() => string);
  readonly headers?: Record<string, string>;
  readonly fetch: typeof fetch;
  /** 'throw' fails the request (tests); a function is told and the answer passes as it came. */
  readonly onSchemaMismatch: 'throw' | ((report: SchemaMismatch) => void);
}

function searchParamsOf(params: Record<string, unknown> | undefined): string {
  const text = (value: unknown): string =>
    typeof value === 'string' || typeof value === 'number' || typeof value === 'boolean'
      ? String(value)
      : JSON.stringify(value);
  const query = new URLSearchParams();
  for (const [key, value] of Object.entries(params ?? {})) {
    if (value === undefined || value === null) continue;
    if (Array.isArray(value)) {
      for (const item of value as unknown[])
        if (item !== undefined && item !== null) query.append(key, text(item));
    } else {
      query.set(key, text(value));
    }
  }
  const written = query.toString();
  return written === '' ? '' : `?${written}`;
}

async function bodyOf(response: Response): Promise<unknown> {
  const text = await response.text();
  if (text === '') return undefined;
  try {
    return JSON.parse(text);
  } catch {
    return text;
  }
}

export function jiraTransport(options: TransportOptions): Client {
  return {
    async sendRequest<T>(request: SendRequestOptions<T>): Promise<T> {
      const method = request.method ?? 'GET';
      const path = request.url.startsWith('/') ? request.url : `/${request.url}`;
      const hasBody = request.body !== undefined && request.body !== null;
      const response = await options.fetch(
        `${options.host}${path}${searchParamsOf(request.searchParams)}`,
        {
          method,
          headers: {
            Accept: 'application/json',
            ...(hasBody || (method !== 'GET' && method !== 'HEAD')
              ? { 'Content-Type': 'application/json' }
              : {}),
            Authorization:
              typeof options.authorization === 'string'
                ? options.authorization
                : options.authorization(),
            ...options.headers,
            ...request.headers,
          },
          ...(hasBody ? { body: JSON.stringify(request.body) } : {}),
        },
      );
      if (!response.ok) {
        const headers = Object.fromEntries(response.headers);
        throw new JiraHttpError(response.status, await bodyOf(response), headers);
      }
      if (response.status === 204) return undefined as T;
      const data = await bodyOf(response);
      if (request.schema === undefined || data === undefined) return data as T;
      const parsed = request.schema.safeParse(data);
      if (parsed.success) return parsed.data;
      const report = { endpoint: `${method} ${request.url}`, issues: parsed.error.issues };
      if (options.onSchemaMismatch === 'throw')
        throw new Error(`Jira's answer to ${report.endpoint} differs from jira.js's schema`, {
          cause: parsed.error,
        });
      options.onSchemaMismatch(report);
      return data as T;
    },
  };
}
