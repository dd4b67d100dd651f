import { readFileSync } from 'node:fs';
import { isIP } from 'node:net';
import { loadSigner } from '@gatehouse/audit';
import * as z from 'zod';
import { closest, meantFor, secretValueProblem } from './config-hints.js';
import { ConfigError } from './errors.js';
import { MIN_SECRET_LENGTH, registerSecretValues } from './secrets.js';

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

/**
 * A secret string whose problems can be told without repeating it: `explain` says what is wrong
 * with a value (a Slack bot token starts `xoxb-`) in words that never contain the value.
 */
export function secretText(explain: (value: string) => string | undefined = () => undefined) {
  return secret(
    z
      .string()
      .min(1)
      .superRefine((value, ctx) => {
        const problem = explain(value);
        // `safe`: the message never holds the value, so it passes the secret filter.
        if (problem !== undefined)
          ctx.addIssue({ code: 'custom', message: problem, params: { safe: true } });
      }),
  );
}

const upstreamRegistry = z.registry<Record<string, never>>();

/**
 * The base URL of an upstream service the server sends credentials to. Plain `http://` is
 * refused for every host but loopback unless GATEHOUSE_ALLOW_PLAIN_HTTP_UPSTREAM is set.
 */
export function upstreamUrl() {
  const schema = z.url({ protocol: /^https?$/ });
  upstreamRegistry.add(schema, {});
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
      'API keys as JSON: [{"id","sha256","principal","scopes":[…],"claims":{…}}] (SHA-256 hex of each key, never the key; claims, optional: what bound tool parameters read of its holder).',
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
  GATEHOUSE_OAUTH_JWKS_URL: upstreamUrl()
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
  GATEHOUSE_MAX_SUBSCRIPTIONS: envInt(1, 100_000)
    .default(64)
    .describe(
      'Subscription streams (subscriptions/listen) open at once; beyond it, 429 over HTTP and a -32603 "Subscription limit reached" over stdio (per connection). They do not count against GATEHOUSE_MAX_INFLIGHT.',
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
  GATEHOUSE_AUDIT_WITNESS_SYSLOG: z
    .url({ protocol: /^tcp$/, error: 'expected tcp://host:port' })
    .optional()
    .describe(
      'A syslog server that receives every checkpoint as it is written (tcp://host:port; RFC 5424 over TCP): a copy the host cannot rewrite, for gatehouse-audit verify --witness.',
    ),
  GATEHOUSE_AUDIT_WITNESS_OTLP: z
    .url({
      protocol: /^https?$/,
      error: 'expected the http(s) URL of a collector’s OTLP logs endpoint',
    })
    .optional()
    .describe(
      'An OpenTelemetry collector’s OTLP/HTTP logs endpoint (…/v1/logs) that receives every checkpoint as it is written, for gatehouse-audit verify --witness.',
    ),
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
  GATEHOUSE_SECRET_VALUES: secret(
    z.string().superRefine((text, ctx) => {
      const short = secretLines(text)
        .filter((l) => l.value.length < MIN_SECRET_LENGTH)
        .map((l) => l.line);
      if (short.length > 0)
        ctx.addIssue({
          code: 'custom',
          message: `line ${short.join(', ')}: shorter than ${MIN_SECRET_LENGTH} characters, so it cannot be told apart from ordinary text`,
          params: { safe: true },
        });
    }),
  )
    .optional()
    .describe(
      "The operator's own secrets, one value a line (# starts a comment), usually as GATEHOUSE_SECRET_VALUES_FILE: writes carrying one are refused, and each is replaced by [REDACTED:GATEHOUSE_SECRET_VALUES] in output, logs and audit records.",
    ),
  GATEHOUSE_ALLOW_PLAIN_HTTP_UPSTREAM: envBoolean
    .default(false)
    .describe(
      'Allow plain http:// upstream URLs (GITHUB_API_URL, JIRA_URL, …) to hosts other than loopback: credentials would travel unencrypted. Logged and audited as a security override.',
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

/** A check across variables, run when every variable it reads has parsed. */
export interface ConfigCheck {
  /** The variables it reads: a problem with one of them is reported already. */
  reads: readonly string[];
  /** Problems, each starting with the variable to fix. */
  problems: (config: Readonly<Record<string, unknown>>) => string[];
}

/** What a server's schema adds to its keys (see {@link defineConfig}). */
export interface ConfigExtras {
  /** Checks across the server's variables (GitHub: a token or an app, not both). */
  checks?: readonly ConfigCheck[];
  /** Names other tools use for a variable (`GITHUB_TOKEN`: `GH_TOKEN`): said when it is missing. */
  aliases?: Readonly<Record<string, readonly string[]>>;
}

const extrasOf = new WeakMap<z.ZodObject, ConfigExtras>();

/** Builds a server's config schema from the base shape plus its own keys. */
export function defineConfig<S extends z.ZodRawShape>(
  shape: S,
  extras: ConfigExtras = {},
): z.ZodObject<typeof baseConfigShape & S> {
  const schema = z.object({ ...baseConfigShape, ...shape });
  extrasOf.set(schema, extras);
  return schema;
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
    .filter(([, field]) => marked(field as z.ZodType, secretRegistry))
    .map(([key]) => key);
}

/** The keys of `schema` that are upstream URLs ({@link upstreamUrl}). */
export function upstreamKeys(schema: z.ZodObject): string[] {
  return Object.entries(schema.shape)
    .filter(([, field]) => marked(field as z.ZodType, upstreamRegistry))
    .map(([key]) => key);
}

/**
 * Whether a field was marked in `registry` (by `secret()`, `upstreamUrl()`), through the wrappers
 * and clones zod makes: `.optional()`/`.default()` wrap it, and `.describe()`/`.meta()` clone it
 * (the clone keeps a `_zod.parent` link), so `secret(z.string()).describe('…')` still counts.
 */
function marked(field: z.ZodType, registry: z.core.$ZodRegistry<Record<string, never>>): boolean {
  const seen = new Set<z.ZodType>();
  const queue: z.ZodType[] = [field];
  while (queue.length > 0) {
    const s = queue.pop()!;
    if (seen.has(s)) continue;
    seen.add(s);
    if (registry.has(s)) return true;
    const parent = s._zod.parent as z.ZodType | undefined;
    if (parent !== undefined) queue.push(parent);
    const inner = unwrap(s);
    if (inner !== s) queue.push(inner);
  }
  return false;
}

/** The values of GATEHOUSE_SECRET_VALUES with their line numbers (blank lines and # comments skipped). */
function secretLines(text: string): Array<{ line: number; value: string }> {
  return text
    .split(/\r?\n/)
    .map((value, i) => ({ line: i + 1, value: value.trim() }))
    .filter((l) => l.value !== '' && !l.value.startsWith('#'));
}

/** Options of {@link loadConfig}. */
export interface LoadConfigOptions {
  /** Reads a `NAME_FILE` path; defaults to a UTF-8 file read. */
  readFile?: (path: string) => string;
}

/** The raw values of a schema's keys, from `NAME` or the file `NAME_FILE` names. */
function readInput(
  keys: readonly string[],
  env: Readonly<Record<string, string | undefined>>,
  readFile: (path: string) => string,
): { input: Record<string, string>; problems: string[] } {
  const problems: string[] = [];
  const input: Record<string, string> = {};
  for (const key of keys) {
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
  return { input, problems };
}

/** The problem lines of one variable that did not parse; a secret's never repeat its value. */
function fieldProblems(
  key: string,
  error: z.ZodError,
  given: boolean,
  isSecret: boolean,
): string[] {
  return error.issues.map((issue) => {
    if (!given && issue.code === 'invalid_type')
      return `${key}: required (set ${key} or ${key}_FILE)`;
    // zod messages never contain the received value, but be explicit for secrets: a secret's
    // problem is told only by a check that promises not to repeat the value.
    const safe = (issue as { params?: { safe?: unknown } }).params?.safe === true;
    return `${key}: ${isSecret && !safe ? 'invalid value (hidden: secret)' : issue.message}`;
  });
}

/** Plain http:// upstream URLs to hosts other than loopback, by variable. */
export function plainHttpUpstreams(
  schema: z.ZodObject,
  config: Readonly<Record<string, unknown>>,
): Array<{ variable: string; host: string }> {
  return upstreamKeys(schema).flatMap((variable) => {
    const value = config[variable];
    if (typeof value !== 'string') return [];
    const url = new URL(value);
    return url.protocol === 'http:' && !isLoopbackHost(url.hostname)
      ? [{ variable, host: url.hostname }]
      : [];
  });
}

/**
 * Parses configuration from an environment map. Every problem is collected and thrown at once
 * as a {@link ConfigError} whose lines start with the variable name: each variable is parsed on
 * its own, then every check across variables whose variables all parsed — so fixing one problem
 * never reveals the next. Empty values count as unset.
 */
export function loadConfig<S extends z.ZodObject>(
  schema: S,
  env: Readonly<Record<string, string | undefined>>,
  options: LoadConfigOptions = {},
): z.output<S> {
  const readFile = options.readFile ?? ((path: string) => readFileSync(path, 'utf8'));
  const keys = Object.keys(schema.shape);
  const secrets = new Set(secretKeys(schema));
  const { input, problems } = readInput(keys, env, readFile);
  // Whatever happens next, the values of secrets never leave the process in clear.
  registerSecretValues({
    ...Object.fromEntries([...secrets].map((key) => [key, input[key]])),
    // The operator's list: each line a value of its own.
    GATEHOUSE_SECRET_VALUES: secretLines(input.GATEHOUSE_SECRET_VALUES ?? '').map((l) => l.value),
  });

  const parsed: Record<string, unknown> = {};
  const failed = new Set<string>();
  for (const key of keys) {
    // A secret pasted with its wrapping or left a placeholder: said first, in its own words.
    const value = input[key];
    const wrapped =
      secrets.has(key) && value !== undefined && key !== 'GATEHOUSE_SECRET_VALUES'
        ? secretValueProblem(value)
        : undefined;
    const result = (schema.shape[key] as z.ZodType).safeParse(value);
    if (wrapped === undefined && result.success) parsed[key] = result.data;
    else {
      failed.add(key);
      problems.push(
        ...(wrapped !== undefined
          ? [`${key}: ${wrapped}`]
          : fieldProblems(key, result.error!, value !== undefined, secrets.has(key))),
      );
    }
  }
  const extras = extrasOf.get(schema) ?? {};
  for (const check of [...BASE_CHECKS, ...(extras.checks ?? [])]) {
    if (check.reads.some((key) => failed.has(key) || !keys.includes(key))) continue;
    problems.push(...check.problems(parsed));
  }
  if (
    !failed.has('GATEHOUSE_ALLOW_PLAIN_HTTP_UPSTREAM') &&
    parsed.GATEHOUSE_ALLOW_PLAIN_HTTP_UPSTREAM !== true
  ) {
    for (const { variable, host } of plainHttpUpstreams(schema, parsed)) {
      problems.push(
        `${variable}: plain http:// to ${host} would carry the credentials unencrypted; use https:// (or set GATEHOUSE_ALLOW_PLAIN_HTTP_UPSTREAM=true on a network you trust; loopback is always allowed)`,
      );
    }
  }
  if (problems.length > 0) throw new ConfigError(withSuggestions(problems, keys, env, extras));
  return parsed as z.output<S>;
}

/** Problems that say a variable is required, with the variables set that were probably meant. */
function withSuggestions(
  problems: readonly string[],
  keys: readonly string[],
  env: Readonly<Record<string, string | undefined>>,
  extras: ConfigExtras,
): string[] {
  const known = new Set(keys.flatMap((k) => [k, `${k}_FILE`]));
  return problems.map((problem) => {
    const match = /^([A-Z][A-Z0-9_]*): required\b/.exec(problem);
    if (match === null) return problem;
    const key = match[1]!;
    const meant = meantFor(key, env, known, extras.aliases?.[key] ?? []);
    return meant.length === 0
      ? problem
      : `${problem}; ${meant.join(' and ')} ${meant.length === 1 ? 'is' : 'are'} set: did you mean ${key}?`;
  });
}

/** The checks across the core's own variables. */
const BASE_CHECKS: readonly ConfigCheck[] = [
  {
    reads: ['GATEHOUSE_TRANSPORT', 'GATEHOUSE_HOST', 'GATEHOUSE_AUTH', 'GATEHOUSE_ALLOWED_HOSTS'],
    problems: (config) => {
      const c = config as unknown as BaseConfig;
      if (c.GATEHOUSE_TRANSPORT !== 'http' || isLoopbackHost(c.GATEHOUSE_HOST)) return [];
      return [
        ...(c.GATEHOUSE_AUTH.includes('none')
          ? [
              `GATEHOUSE_HOST: ${c.GATEHOUSE_HOST} is not a loopback address and GATEHOUSE_AUTH is none; an unauthenticated server may only listen on 127.0.0.1, ::1 or localhost`,
            ]
          : []),
        ...(c.GATEHOUSE_ALLOWED_HOSTS.length === 0
          ? [
              `GATEHOUSE_ALLOWED_HOSTS: required when GATEHOUSE_HOST (${c.GATEHOUSE_HOST}) is not a loopback address (DNS-rebinding protection)`,
            ]
          : []),
      ];
    },
  },
  {
    reads: ['GATEHOUSE_TRANSPORT', 'GATEHOUSE_ALLOWED_ORIGINS'],
    problems: (config) => {
      const c = config as unknown as BaseConfig;
      if (c.GATEHOUSE_TRANSPORT !== 'http') return [];
      return c.GATEHOUSE_ALLOWED_ORIGINS.filter((o) => !/^https?:\/\/[^/\s]+$/.test(o)).map(
        (origin) =>
          `GATEHOUSE_ALLOWED_ORIGINS: "${origin}" is not an origin (expected scheme://host[:port], no path)`,
      );
    },
  },
  {
    reads: ['GATEHOUSE_AUTH', 'GATEHOUSE_API_KEYS'],
    problems: (config) => {
      const c = config as unknown as BaseConfig;
      const auth = c.GATEHOUSE_AUTH;
      const problems =
        auth.includes('none') && auth.length > 1
          ? ['GATEHOUSE_AUTH: none cannot be combined with another method']
          : [];
      if (!auth.includes('api_key')) return problems;
      if (c.GATEHOUSE_API_KEYS === undefined)
        return [...problems, 'GATEHOUSE_API_KEYS: required when GATEHOUSE_AUTH includes api_key'];
      return [...problems, ...apiKeyProblems(c.GATEHOUSE_API_KEYS)];
    },
  },
  {
    reads: [
      'GATEHOUSE_AUTH',
      'GATEHOUSE_OAUTH_ISSUER',
      'GATEHOUSE_PUBLIC_URL',
      'GATEHOUSE_OAUTH_JWKS_URL',
      'GATEHOUSE_OAUTH_PUBLIC_KEY',
    ],
    problems: (config) => {
      const c = config as unknown as BaseConfig;
      if (!c.GATEHOUSE_AUTH.includes('oauth')) return [];
      return [
        ...(c.GATEHOUSE_OAUTH_ISSUER === undefined
          ? ['GATEHOUSE_OAUTH_ISSUER: required when GATEHOUSE_AUTH includes oauth']
          : []),
        ...(c.GATEHOUSE_PUBLIC_URL === undefined
          ? [
              'GATEHOUSE_PUBLIC_URL: required when GATEHOUSE_AUTH includes oauth (it is the audience and the protected resource)',
            ]
          : []),
        ...((c.GATEHOUSE_OAUTH_JWKS_URL === undefined) ===
        (c.GATEHOUSE_OAUTH_PUBLIC_KEY === undefined)
          ? [
              'GATEHOUSE_OAUTH_JWKS_URL: set exactly one of GATEHOUSE_OAUTH_JWKS_URL and GATEHOUSE_OAUTH_PUBLIC_KEY',
            ]
          : []),
      ];
    },
  },
  {
    reads: ['GATEHOUSE_TRANSPORT', 'GATEHOUSE_AUDIT_SINKS', 'GATEHOUSE_AUDIT_FILE'],
    problems: (config) => {
      const c = config as unknown as BaseConfig;
      const sinks = c.GATEHOUSE_AUDIT_SINKS;
      return [
        ...(sinks.includes('file') && c.GATEHOUSE_AUDIT_FILE === undefined
          ? ['GATEHOUSE_AUDIT_FILE: required when GATEHOUSE_AUDIT_SINKS includes file']
          : []),
        ...(c.GATEHOUSE_AUDIT_FILE !== undefined && !sinks.includes('file')
          ? [
              'GATEHOUSE_AUDIT_SINKS: add file to write to GATEHOUSE_AUDIT_FILE (it is set but unused)',
            ]
          : []),
        ...(sinks.includes('stdout') && c.GATEHOUSE_TRANSPORT === 'stdio'
          ? [
              'GATEHOUSE_AUDIT_SINKS: stdout carries the protocol on the stdio transport; use stderr or file',
            ]
          : []),
      ];
    },
  },
  {
    reads: ['GATEHOUSE_AUDIT_SIGNING_KEY'],
    problems: (config) => {
      const key = (config as unknown as BaseConfig).GATEHOUSE_AUDIT_SIGNING_KEY;
      if (key === undefined) return [];
      try {
        loadSigner(key);
        return [];
      } catch {
        return [
          'GATEHOUSE_AUDIT_SIGNING_KEY: not an Ed25519 private key in PKCS#8 PEM form (hidden: secret)',
        ];
      }
    },
  },
];

/**
 * Variables other software sets under the same prefixes (GitHub Actions, the postgres image):
 * not a misspelling of ours, so not worth a warning.
 */
const FOREIGN_VARIABLES =
  /^(?:GITHUB_(?:ACTIONS?|ACTION_\w+|ACTOR(?:_ID)?|API_URL_\w+|BASE_REF|ENV|EVENT_\w+|GRAPHQL_URL|HEAD_REF|JOB|OUTPUT|PATH|REF(?:_\w+)?|REPOSITORY(?:_\w+)?|RETENTION_DAYS|RUN_\w+|SERVER_URL|SHA|STATE|STEP_SUMMARY|TRIGGERING_ACTOR|WORKFLOW(?:_\w+)?|WORKSPACE)|POSTGRES_(?:PASSWORD|USER|DB|INITDB_\w+|HOST_AUTH_METHOD)(?:_FILE)?)$/;

/**
 * Variables that look meant for this server but that it does not know — `GATEHOUSE_*`, the
 * prefixes of its own keys (`POSTGRES_*`) and the aliases it declares (`GH_TOKEN`) — each with
 * the known name it was probably meant as: a misspelling (`POSTGRES_MASK_COLUMN`) would
 * otherwise be ignored without a word, and with it the protection the operator asked for.
 */
export function unknownVariables(
  schema: z.ZodObject,
  env: Readonly<Record<string, string | undefined>>,
): Array<{ name: string; suggestion?: string }> {
  const known = Object.keys(schema.shape);
  const prefixes = new Set(known.map((k) => `${k.split('_')[0]!}_`));
  const accepted = new Set(known.flatMap((k) => [k, `${k}_FILE`]));
  const aliasOf = new Map(
    Object.entries(extrasOf.get(schema)?.aliases ?? {}).flatMap(([key, names]) =>
      names.map((name) => [name, key] as const),
    ),
  );
  const unknown: Array<{ name: string; suggestion?: string }> = [];
  for (const name of Object.keys(env).sort()) {
    const bare = name.replace(/_FILE$/, '');
    const alias = aliasOf.get(bare);
    if (accepted.has(name)) continue;
    if (
      alias === undefined &&
      (![...prefixes].some((p) => name.startsWith(p)) || FOREIGN_VARIABLES.test(name))
    )
      continue;
    const key = alias ?? closest(bare, known);
    unknown.push(
      key === undefined
        ? { name }
        : { name, suggestion: name.endsWith('_FILE') ? `${key}_FILE` : key },
    );
  }
  return unknown;
}

/** A claim's name, in a token or an API key's `claims`. */
export const CLAIM_NAME = /^[A-Za-z_][\w.:-]{0,63}$/;

/** One configured API key: the SHA-256 of the key (hex), never the key. */
export const ApiKeySchema = z.strictObject({
  id: z.string().regex(/^[\w.@:-]{1,64}$/, 'id: 1-64 characters of letters, digits and . _ @ : -'),
  sha256: z
    .string()
    .regex(/^[0-9a-f]{64}$/, 'sha256: the hex SHA-256 of the key (64 lowercase hex digits)'),
  principal: z.string().min(1).max(128),
  scopes: z.array(z.string().min(1).max(128)).default([]),
  /** What the key says of its holder (a customer id, a tenant, an e-mail): bound parameters read it. */
  claims: z
    .record(
      z
        .string()
        .regex(CLAIM_NAME, 'claims: names of letters, digits and . _ : - (a letter or _ first)'),
      z.string().max(1_024),
    )
    .optional(),
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
