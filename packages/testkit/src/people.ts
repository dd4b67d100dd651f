import { createHash } from 'node:crypto';
import { connectHttp } from './clients.js';
import { resultText } from './results.js';

/**
 * A server that acts as each person (ADR 0026) under test: the core's settings every such test
 * gives it — HTTP on 127.0.0.1, an API key per person (principal `ci-<who>`, key id `k-<who>`,
 * only the key's hash configured), user mode and the operator's logins — plus the test's own.
 */
export function personServerEnv(
  options: {
    port: number;
    /** The one public address (behind an ingress, replicas share the first one's). */
    publicUrl?: string;
    /** Each person's API key. */
    keys: Readonly<Record<string, string>>;
    scopes: readonly string[];
    /** GATEHOUSE_IDENTITY_LOGINS. */
    logins: string;
  },
  extra: Readonly<Record<string, string>>,
): Record<string, string> {
  return {
    // eslint-disable-next-line no-restricted-syntax -- the child's PATH, not a setting
    PATH: process.env.PATH ?? '',
    GATEHOUSE_TRANSPORT: 'http',
    GATEHOUSE_HOST: '127.0.0.1',
    GATEHOUSE_PORT: String(options.port),
    GATEHOUSE_PUBLIC_URL: options.publicUrl ?? `http://127.0.0.1:${options.port}/mcp`,
    GATEHOUSE_AUTH: 'api_key',
    GATEHOUSE_API_KEYS: JSON.stringify(
      Object.entries(options.keys).map(([who, key]) => ({
        id: `k-${who}`,
        sha256: createHash('sha256').update(key).digest('hex'),
        principal: `ci-${who}`,
        scopes: options.scopes,
      })),
    ),
    GATEHOUSE_IDENTITY: 'user',
    GATEHOUSE_IDENTITY_LOGINS: options.logins,
    ...extra,
  };
}

/** One tool call with API key `key` on a fresh connection to `url`. */
export async function callWithKey(
  url: URL | string,
  key: string,
  name: string,
  args: Record<string, unknown> = {},
) {
  const { client, close } = await connectHttp(url, {
    headers: { authorization: `Bearer ${key}` },
  });
  try {
    return await client.callTool({ name, arguments: args });
  } finally {
    await close();
  }
}

/** The link to connect that an answer names (`… open <link> in your browser …`). */
export function connectLink(result: unknown): string | undefined {
  return /open (\S+) in your browser/.exec(resultText(result))?.[1];
}
