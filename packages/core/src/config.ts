import { readFileSync } from 'node:fs';
import { isIP } from 'node:net';
import { loadSigner } from '@gatehouse/audit';
import * as z from 'zod';
import { ConfigError } from './errors.js';
import { registerSecretValues } from './secrets.js';

/**
 * Configuration (docs/configuration.md): one zod object whose keys are the environment variable names, so
 * every problem is reported under the name the operator has to fix. Servers extend
 * {@link baseConfigShape} with their own keys. Every key also accepts a `NAME_FILE` variant whose
 * value is a path to read the value from (Docker and Kubernetes secrets).
 */

const secretRegistry = z.registry<Record<string, never>>();

/** Marks a config value as secret: it is never logged, echoed in errors or audited. */
export function secret<T extends z.ZodType>(schema: T): T {
  secretRegistry.add(schema, {});
  return schema;
}

const truthy = ['true', '1', 'yes', 'on'];
const falsy = ['false', '0', 'no', 'off'];

/** A boolean environment variable: true/false, 1/0, yes/no, on/off (case-insensitive). */
export const envBoolean = z
  .string()
  .trim()
  .toLowerCase()
  .refine((v) => truthy.includes(v) || falsy.includes(v), {
    message: 'expected one of true, false, 1, 0, yes, no, on, off',
  })
  .transform((v) => truthy.includes(v));

/** A comma-separated list; blanks are dropped. */
export const envList = z.string().transform((v) =>
  v
    .split(',')
    .map((s) => s.trim())
    .filter((s) => s.length > 0),
);

/** An integer environment variable within bounds. */
export function envInt(min: number, max: number) {
  return z
    .string()
    .trim()
    .regex(/^-?\d+$/, 'expected an integer')
    .transform(Number)
    .pipe(z.number().int().min(min).max(max));
}

/** The settings every Gatehouse server shares. */
export const baseConfigShape = {
  GATEHOUSE_TRANSPORT: z
    .enum(['stdio', 'http'])
    .default('stdio')
    .describe('stdio for Claude Desktop and other local clients; http for Streamable HTTP.'),
  GATEHOUSE_HOST: z
    .string()
    .min(1)
    .default('127.0.0.1')
    .describe('Address the HTTP transport binds to.'),
  GATEHOUSE_PORT: envInt(0, 65535).default(3000).describe('HTTP port (0 picks a free one).'),
  GATEHOUSE_HTTP_PATH: z
    .string()
    .regex(/^\/[A-Za-z0-9._~/-]*$/, 'expected an absolute URL path such as /mcp')
    .default('/mcp')
    .describe('Path of the MCP endpoint.'),
  GATEHOUSE_ALLOWED_ORIGINS: envList
    .default([])
    .describe(
      'Origins (scheme://host[:port]) browsers may call from; localhost origins are allowed on a loopback bind.',
    ),
  GATEHOUSE_ALLOWED_HOSTS: envList
    .default([])
    .describe(
      'Host header values accepted (hostnames); required when binding to a non-loopback address.',
    ),
  GATEHOUSE_MAX_BODY_BYTES: envInt(1024, 64 * 1024 * 1024)
    .default(1024 * 1024)
    .describe('Largest accepted HTTP request body; larger ones get 413.'),
  GATEHOUSE_HTTP_KEEPALIVE_MS: envInt(1_000, 3_600_000)
    .default(65_000)
    .describe(
      'How long an idle HTTP keep-alive connection stays open; keep it above the load balancer idle timeout (often 60 s).',
    ),
  GATEHOUSE_HTTP_HEADERS_TIMEOUT_MS: envInt(1_000, 600_000)
    .default(30_000)
    .describe('How long a client may take to send the request headers (slow-loris guard).'),
  GATEHOUSE_METRICS_PORT: envInt(0, 65535)
    .optional()
    .describe(
      'Serve Prometheus metrics at /metrics on this separate port (unset: no metrics listener); never on the MCP port.',
    ),
  GATEHOUSE_METRICS_HOST: z
    .string()
    .min(1)
    .optional()
    .describe('Address the metrics listener binds to (default: GATEHOUSE_HOST).'),
  GATEHOUSE_DRAIN_MS: envInt(0, 600_000)
    .default(10_000)
    .describe('On SIGTERM/SIGINT, how long in-flight calls may take to finish.'),
  GATEHOUSE_TOOL_TIMEOUT_MS: envInt(100, 3_600_000)
    .default(30_000)
    .describe('Default per-call deadline of a tool (a tool may set its own).'),
  GATEHOUSE_LOG_LEVEL: z
    .enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'])
    .default('info')
    .describe('Log level of the stderr log.'),
  GATEHOUSE_TOOLS_ENABLE: envList
    .default([])
    .describe('Only these tools are enabled (names); empty means all read tools.'),
  GATEHOUSE_TOOLS_DISABLE: envList.default([]).describe('These tools are disabled (names).'),
  GATEHOUSE_ENABLE_WRITES: envBoolean
    .default(false)
    .describe('Enable every write tool (write tools are off by default).'),
  GATEHOUSE_READ_ONLY: envBoolean
    .default(false)
    .describe('Disable every write tool, whatever else is configured.'),
  GATEHOUSE_AUTH: envList
    .pipe(z.array(z.enum(['none', 'api_key', 'oauth'])).min(1))
    .default(['none'])
    .describe(
      'HTTP authentication: none (loopback only), api_key, oauth, or api_key,oauth. stdio is local trust.',
    ),
  GATEHOUSE_API_KEYS: secret(z.string().min(2))
    .optional()
    .describe(
      'API keys as JSON: [{"id","sha256","principal","scopes":[…]}] (SHA-256 hex of each key, never the key).',
    ),
  GATEHOUSE_PUBLIC_URL: z
    .url({ protocol: /^https?$/ })
    .optional()
    .describe(
      'The canonical URL of the MCP endpoint (RFC 8707 resource, OAuth audience); required for oauth.',
    ),
  GATEHOUSE_OAUTH_ISSUER: z.url().optional().describe('Issuer (`iss`) tokens must carry.'),
  GATEHOUSE_OAUTH_AUDIENCE: z
    .string()
    .min(1)
    .optional()
    .describe('Audience (`aud`) tokens must carry (default: GATEHOUSE_PUBLIC_URL).'),
  GATEHOUSE_OAUTH_JWKS_URL: z
    .url()
    .optional()
    .describe("The issuer's JWKS URL (cached, refetched for unknown key ids)."),
  GATEHOUSE_OAUTH_PUBLIC_KEY: z
    .string()
    .min(1)
    .optional()
    .describe('A static verification key instead of JWKS: PEM (SPKI) or a JWK as JSON.'),
  GATEHOUSE_OAUTH_ALGORITHMS: envList
    .default(['RS256', 'PS256', 'ES256', 'EdDSA'])
    .describe('Accepted JWS algorithms.'),
  GATEHOUSE_OAUTH_CLOCK_SKEW_S: envInt(0, 300).default(30).describe('Tolerance for exp and nbf.'),
  GATEHOUSE_OAUTH_AUTHORIZATION_SERVERS: envList
    .default([])
    .describe('Authorization servers in the RFC 9728 metadata (default: the issuer).'),
  GATEHOUSE_ALLOW_TARGETS: envList
    .default([])
    .describe(
      'Allow-list of targets (github:acme/*, slack:C0123, jira:OPS, pg:db/public); once a kind has a pattern, other targets of that kind are denied.',
    ),
  GATEHOUSE_RATE_READ_PER_MIN: envInt(1, 1_000_000)
    .default(120)
    .describe(
      'Calls per minute of each read tool, resource, prompt and completion, per principal: at most this many in any 60 seconds.',
    ),
  GATEHOUSE_RATE_WRITE_PER_MIN: envInt(1, 1_000_000)
    .default(20)
    .describe(
      'Calls per minute of each write tool, per principal: at most this many in any 60 seconds.',
    ),
  GATEHOUSE_REDIS_URL: secret(
    z.string().regex(/^rediss?:\/\/\S+$/, 'expected a redis:// or rediss:// URL'),
  )
    .optional()
    .describe(
      'Redis shared by the replicas: rate limits count across all of them (unset: per process).',
    ),
  GATEHOUSE_RATE_LIMIT_ON_STORE_FAILURE: z
    .enum(['memory', 'closed'])
    .default('memory')
    .describe(
      'When Redis is unreachable: memory (each replica limits alone until it is back) or closed (refuse every call and report not ready).',
    ),
  GATEHOUSE_MAX_CONCURRENT_PER_PRINCIPAL: envInt(1, 10_000)
    .default(8)
    .describe('Calls one principal may have running at once.'),
  GATEHOUSE_MAX_INFLIGHT: envInt(1, 100_000)
    .default(64)
    .describe(
      'Calls (and HTTP requests) the process runs at once; beyond it calls get a retry hint, HTTP gets 429.',
    ),
  GATEHOUSE_MAX_OUTPUT_BYTES: envInt(1024, 64 * 1024 * 1024)
    .default(256 * 1024)
    .describe('Default size budget of a tool result or resource text (a tool may set its own).'),
  GATEHOUSE_STRUCTURED_OUTPUT: envBoolean
    .default(false)
    .describe(
      'List output schemas and answer with structured content beside the text, for clients that consume it; off, the model gets one copy of each answer.',
    ),
  GATEHOUSE_CONFIRM_WRITES: envBoolean
    .default(false)
    .describe(
      'Ask the user to confirm each write call (elicitation / input-required) when the client can.',
    ),
  GATEHOUSE_CONFIRM_FALLBACK: z
    .enum(['refuse', 'proceed'])
    .default('refuse')
    .describe('With GATEHOUSE_CONFIRM_WRITES, what to do when the client cannot ask the user.'),
  GATEHOUSE_STATE_KEY: secret(z.string().min(32, 'expected at least 32 characters'))
    .optional()
    .describe(
      'HMAC key sealing multi-round-trip request state; set the same value on every replica (default: random per process).',
    ),
  GATEHOUSE_AUDIT_SINKS: envList
    .pipe(z.array(z.enum(['stderr', 'stdout', 'file'])))
    .default([])
    .describe(
      'Where audit records go: any of stderr, stdout, file (default: stderr on stdio, stdout on http).',
    ),
  GATEHOUSE_AUDIT_FILE: z
    .string()
    .min(1)
    .optional()
    .describe(
      'Path of the append-only audit file (with the file sink); rotated files sit beside it.',
    ),
  GATEHOUSE_AUDIT_ROTATE_BYTES: envInt(1024, 1024 ** 4)
    .default(100 * 1024 * 1024)
    .describe('Rotate the audit file when it would grow past this size.'),
  GATEHOUSE_AUDIT_ROTATE_DAILY: envBoolean
    .default(true)
    .describe('Rotate the audit file when the UTC day changes.'),
  GATEHOUSE_AUDIT_CHECKPOINT_EVERY: envInt(1, 1_000_000)
    .default(1000)
    .describe('Write a (signed) checkpoint after this many records, and always on shutdown.'),
  GATEHOUSE_AUDIT_SIGNING_KEY: secret(z.string().min(1))
    .optional()
    .describe(
      'Ed25519 private key (PKCS#8 PEM) that signs checkpoints; `gatehouse-audit keygen` makes one.',
    ),
  GATEHOUSE_AUDIT_KEY_ID: z
    .string()
    .min(1)
    .max(128)
    .optional()
    .describe('Key id written with each signature (default: derived from the public key).'),
  GATEHOUSE_AUDIT_ON_FAILURE: z
    .enum(['refuse_writes', 'refuse_all', 'continue'])
    .default('refuse_writes')
    .describe(
      'When an audit sink cannot be written: refuse write tools (default), refuse every tool, or continue.',
    ),
  GATEHOUSE_AUDIT_READ_RECORDS: z
    .enum(['after_answer', 'before_answer'])
    .default('after_answer')
    .describe(
      'When the record of a read (read tool, resource, prompt) is written: right after its answer is sent (default), or before it. Write tools are always recorded before their answer.',
    ),
  GATEHOUSE_PRINCIPAL: z
    .string()
    .regex(/^[\w.@:-]{1,128}$/, 'expected 1-128 characters of letters, digits and . _ @ : -')
    .optional()
    .describe('Principal id of the local operator on stdio (default: local:<OS user>).'),
} as const;

/** The base schema, for servers that add nothing of their own. */
export const baseConfigSchema = z.object(baseConfigShape);
/** The base configuration after parsing. */
export type BaseConfig = z.output<typeof baseConfigSchema>;

/** Builds a server's config schema from the base shape plus its own keys. */
export function defineConfig<S extends z.ZodRawShape>(
  shape: S,
): z.ZodObject<typeof baseConfigShape & S> {
  return z.object({ ...baseConfigShape, ...shape });
}

/** True for addresses that only this machine can reach. */
export function isLoopbackHost(host: string): boolean {
  if (host === 'localhost') return true;
  const bare = host.replace(/^\[|\]$/g, '');
  if (isIP(bare) === 4) return bare.startsWith('127.');
  if (isIP(bare) === 6) return bare === '::1';
  return false;
}

function unwrap(schema: z.ZodType): z.ZodType {
  let current: z.ZodType = schema;
  for (;;) {
    if (current instanceof z.ZodOptional || current instanceof z.ZodDefault) {
      current = current.unwrap() as z.ZodType;
    } else {
      return current;
    }
  }
}

/** The keys of `schema` whose values are secret. */
export function secretKeys(schema: z.ZodObject): string[] {
  return Object.entries(schema.shape)
    .filter(([, field]) => isSecret(field as z.ZodType))
    .map(([key]) => key);
}

/**
 * Whether a field was marked with `secret()`, through the wrappers and clones zod makes:
 * `.optional()`/`.default()` wrap it, and `.describe()`/`.meta()` clone it (the clone keeps a
 * `_zod.parent` link), so `secret(z.string()).describe('…')` still counts.
 */
function isSecret(field: z.ZodType): boolean {
  const seen = new Set<z.ZodType>();
  const queue: z.ZodType[] = [field];
  while (queue.length > 0) {
    const s = queue.pop()!;
    if (seen.has(s)) continue;
    seen.add(s);
    if (secretRegistry.has(s)) return true;
    const parent = s._zod.parent as z.ZodType | undefined;
    if (parent !== undefined) queue.push(parent);
    const inner = unwrap(s);
    if (inner !== s) queue.push(inner);
  }
  return false;
}

/** Options of {@link loadConfig}. */
export interface LoadConfigOptions {
  /** Reads a `NAME_FILE` path; defaults to a UTF-8 file read. */
  readFile?: (path: string) => string;
}

/**
 * Parses configuration from an environment map. Every problem is collected and thrown at once
 * as a {@link ConfigError} whose lines start with the variable name. Empty values count as unset.
 */
export function loadConfig<S extends z.ZodObject>(
  schema: S,
  env: Readonly<Record<string, string | undefined>>,
  options: LoadConfigOptions = {},
): z.output<S> {
  const readFile = options.readFile ?? ((path: string) => readFileSync(path, 'utf8'));
  const secrets = new Set(secretKeys(schema));
  const problems: string[] = [];
  const input: Record<string, string> = {};
  for (const key of Object.keys(schema.shape)) {
    const direct = env[key];
    const filePath = env[`${key}_FILE`];
    if (filePath !== undefined && filePath !== '') {
      if (direct !== undefined && direct !== '') {
        problems.push(`${key}: set either ${key} or ${key}_FILE, not both`);
        continue;
      }
      try {
        input[key] = readFile(filePath).replace(/\r?\n$/, '');
      } catch (error) {
        const reason = (error as NodeJS.ErrnoException).code ?? 'unreadable';
        problems.push(`${key}_FILE: cannot read ${filePath} (${reason})`);
      }
    } else if (direct !== undefined && direct !== '') {
      input[key] = direct;
    }
  }
  const result = schema.safeParse(input);
  if (!result.success) {
    for (const issue of result.error.issues) {
      const key = String(issue.path[0] ?? '(config)');
      // zod messages never contain the received value, but be explicit for secrets.
      // A secret's problem is told only by a check that promises not to repeat the value.
      const safe = (issue as { params?: { safe?: unknown } }).params?.safe === true;
      const message =
        input[key] === undefined && issue.code === 'invalid_type'
          ? `required (set ${key} or ${key}_FILE)`
          : secrets.has(key) && !safe
            ? 'invalid value (hidden: secret)'
            : issue.message;
      problems.push(`${key}: ${message}`);
    }
  }
  // Whatever happens next, the values of secrets never leave the process in clear.
  registerSecretValues(Object.fromEntries([...secrets].map((key) => [key, input[key]])));
  if (problems.length > 0) throw new ConfigError(problems);
  const config = (result as { data: z.output<S> }).data;
  const base = config as unknown as BaseConfig;
  if (base.GATEHOUSE_TRANSPORT === 'http') {
    const loopback = isLoopbackHost(base.GATEHOUSE_HOST);
    if (!loopback && base.GATEHOUSE_AUTH.includes('none')) {
      problems.push(
        `GATEHOUSE_HOST: ${base.GATEHOUSE_HOST} is not a loopback address and GATEHOUSE_AUTH is none; an unauthenticated server may only listen on 127.0.0.1, ::1 or localhost`,
      );
    }
    if (!loopback && base.GATEHOUSE_ALLOWED_HOSTS.length === 0) {
      problems.push(
        `GATEHOUSE_ALLOWED_HOSTS: required when GATEHOUSE_HOST (${base.GATEHOUSE_HOST}) is not a loopback address (DNS-rebinding protection)`,
      );
    }
    for (const origin of base.GATEHOUSE_ALLOWED_ORIGINS) {
      if (!/^https?:\/\/[^/\s]+$/.test(origin)) {
        problems.push(
          `GATEHOUSE_ALLOWED_ORIGINS: "${origin}" is not an origin (expected scheme://host[:port], no path)`,
        );
      }
    }
  }
  const auth = base.GATEHOUSE_AUTH;
  if (auth.includes('none') && auth.length > 1) {
    problems.push('GATEHOUSE_AUTH: none cannot be combined with another method');
  }
  if (auth.includes('api_key')) {
    if (base.GATEHOUSE_API_KEYS === undefined) {
      problems.push('GATEHOUSE_API_KEYS: required when GATEHOUSE_AUTH includes api_key');
    } else {
      problems.push(...apiKeyProblems(base.GATEHOUSE_API_KEYS));
    }
  }
  if (auth.includes('oauth')) {
    if (base.GATEHOUSE_OAUTH_ISSUER === undefined) {
      problems.push('GATEHOUSE_OAUTH_ISSUER: required when GATEHOUSE_AUTH includes oauth');
    }
    if (base.GATEHOUSE_PUBLIC_URL === undefined) {
      problems.push(
        'GATEHOUSE_PUBLIC_URL: required when GATEHOUSE_AUTH includes oauth (it is the audience and the protected resource)',
      );
    }
    if (
      (base.GATEHOUSE_OAUTH_JWKS_URL === undefined) ===
      (base.GATEHOUSE_OAUTH_PUBLIC_KEY === undefined)
    ) {
      problems.push(
        'GATEHOUSE_OAUTH_JWKS_URL: set exactly one of GATEHOUSE_OAUTH_JWKS_URL and GATEHOUSE_OAUTH_PUBLIC_KEY',
      );
    }
  }
  const sinks = base.GATEHOUSE_AUDIT_SINKS;
  if (sinks.includes('file') && base.GATEHOUSE_AUDIT_FILE === undefined) {
    problems.push('GATEHOUSE_AUDIT_FILE: required when GATEHOUSE_AUDIT_SINKS includes file');
  }
  if (base.GATEHOUSE_AUDIT_FILE !== undefined && !sinks.includes('file')) {
    problems.push(
      'GATEHOUSE_AUDIT_SINKS: add file to write to GATEHOUSE_AUDIT_FILE (it is set but unused)',
    );
  }
  if (sinks.includes('stdout') && base.GATEHOUSE_TRANSPORT === 'stdio') {
    problems.push(
      'GATEHOUSE_AUDIT_SINKS: stdout carries the protocol on the stdio transport; use stderr or file',
    );
  }
  if (base.GATEHOUSE_AUDIT_SIGNING_KEY !== undefined) {
    try {
      loadSigner(base.GATEHOUSE_AUDIT_SIGNING_KEY);
    } catch {
      problems.push(
        'GATEHOUSE_AUDIT_SIGNING_KEY: not an Ed25519 private key in PKCS#8 PEM form (hidden: secret)',
      );
    }
  }
  if (problems.length > 0) throw new ConfigError(problems);
  return config;
}

/** Edit distance between two names (insertions, deletions, substitutions). */
function distance(a: string, b: string): number {
  let previous = Array.from({ length: b.length + 1 }, (_, i) => i);
  for (let i = 1; i <= a.length; i++) {
    const current = [i];
    for (let j = 1; j <= b.length; j++) {
      current[j] = Math.min(
        previous[j]! + 1,
        current[j - 1]! + 1,
        previous[j - 1]! + (a[i - 1] === b[j - 1] ? 0 : 1),
      );
    }
    previous = current;
  }
  return previous[b.length]!;
}

/**
 * Variables other software sets under the same prefixes (GitHub Actions, the postgres image):
 * not a misspelling of ours, so not worth a warning.
 */
const FOREIGN_VARIABLES =
  /^(?:GITHUB_(?:ACTIONS?|ACTION_\w+|ACTOR(?:_ID)?|API_URL_\w+|BASE_REF|ENV|EVENT_\w+|GRAPHQL_URL|HEAD_REF|JOB|OUTPUT|PATH|REF(?:_\w+)?|REPOSITORY(?:_\w+)?|RETENTION_DAYS|RUN_\w+|SERVER_URL|SHA|STATE|STEP_SUMMARY|TRIGGERING_ACTOR|WORKFLOW(?:_\w+)?|WORKSPACE)|POSTGRES_(?:PASSWORD|USER|DB|INITDB_\w+|HOST_AUTH_METHOD)(?:_FILE)?)$/;

/**
 * Variables that look meant for this server but that it does not know — `GATEHOUSE_*` and the
 * prefixes of its own keys (`POSTGRES_*`) — each with the closest known name when one is near:
 * a misspelling (`POSTGRES_MASK_COLUMN`) would otherwise be ignored without a word, and with it
 * the protection the operator asked for.
 */
export function unknownVariables(
  schema: z.ZodObject,
  env: Readonly<Record<string, string | undefined>>,
): Array<{ name: string; suggestion?: string }> {
  const known = Object.keys(schema.shape);
  const prefixes = new Set(known.map((k) => `${k.split('_')[0]!}_`));
  const accepted = new Set(known.flatMap((k) => [k, `${k}_FILE`]));
  const unknown: Array<{ name: string; suggestion?: string }> = [];
  for (const name of Object.keys(env).sort()) {
    if (accepted.has(name) || ![...prefixes].some((p) => name.startsWith(p))) continue;
    if (FOREIGN_VARIABLES.test(name)) continue;
    const bare = name.replace(/_FILE$/, '');
    let best: { key: string; d: number } | undefined;
    for (const key of known) {
      const d = distance(bare, key);
      if (best === undefined || d < best.d) best = { key, d };
    }
    const near = best !== undefined && best.d <= Math.max(2, Math.floor(best.key.length / 4));
    unknown.push(
      near
        ? { name, suggestion: name.endsWith('_FILE') ? `${best!.key}_FILE` : best!.key }
        : { name },
    );
  }
  return unknown;
}

/** One configured API key: the SHA-256 of the key (hex), never the key. */
export const ApiKeySchema = z.strictObject({
  id: z.string().regex(/^[\w.@:-]{1,64}$/, 'id: 1-64 characters of letters, digits and . _ @ : -'),
  sha256: z
    .string()
    .regex(/^[0-9a-f]{64}$/, 'sha256: the hex SHA-256 of the key (64 lowercase hex digits)'),
  principal: z.string().min(1).max(128),
  scopes: z.array(z.string().min(1).max(128)).default([]),
});
/** A configured API key. */
export type ApiKey = z.output<typeof ApiKeySchema>;

/** Parses GATEHOUSE_API_KEYS. */
export function parseApiKeys(text: string): ApiKey[] {
  return z.array(ApiKeySchema).min(1).parse(JSON.parse(text));
}

function apiKeyProblems(text: string): string[] {
  try {
    const keys = parseApiKeys(text);
    const ids = keys.map((k) => k.id);
    const duplicate = ids.find((id, i) => ids.indexOf(id) !== i);
    return duplicate === undefined ? [] : [`GATEHOUSE_API_KEYS: duplicate key id "${duplicate}"`];
  } catch (error) {
    if (error instanceof z.ZodError) {
      return error.issues.map((i) => `GATEHOUSE_API_KEYS: ${i.path.join('.')}: ${i.message}`);
    }
    return ['GATEHOUSE_API_KEYS: not valid JSON (expected [{"id","sha256","principal","scopes"}])'];
  }
}

/** The configuration with secret values replaced, safe to log and audit. */
export function redactConfig(schema: z.ZodObject, config: object): Record<string, unknown> {
  const secrets = new Set(secretKeys(schema));
  return Object.fromEntries(
    Object.entries(config).map(([key, value]) => [
      key,
      secrets.has(key) && value !== undefined ? '[secret]' : (value as unknown),
    ]),
  );
}

/** One row of the configuration reference. */
export interface ConfigVariable {
  name: string;
  default: string;
  description: string;
  secret: boolean;
}

/** The variables of a config schema with defaults and descriptions, for generated docs. */
export function describeConfig(schema: z.ZodObject): ConfigVariable[] {
  const secrets = new Set(secretKeys(schema));
  return Object.entries(schema.shape).map(([name, field]) => {
    const s = field as z.ZodType;
    let fallback = '';
    if (s instanceof z.ZodDefault) {
      const value: unknown = s.def.defaultValue;
      fallback = Array.isArray(value)
        ? value.length
          ? value.join(',')
          : '(empty)'
        : String(value);
    } else if (!(s instanceof z.ZodOptional)) {
      fallback = '(required)';
    }
    return { name, default: fallback, description: s.description ?? '', secret: secrets.has(name) };
  });
}

/** The configuration reference of a schema as a Markdown table. */
export function configTable(schema: z.ZodObject): string {
  const rows = describeConfig(schema).map(
    (v) =>
      `| \`${v.name}\`${v.secret ? ' (secret)' : ''} | ${v.default ? `\`${v.default}\`` : ''} | ${v.description.replace(/\|/g, '\\|')} |`,
  );
  return ['| variable | default | meaning |', '|---|---|---|', ...rows].join('\n');
}
