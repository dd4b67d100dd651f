import { pino } from 'pino';
import type { DestinationStream, Logger as PinoLogger, LevelWithSilent } from 'pino';
import { scrubSecrets } from './secrets.js';

/** The structured logger every part of a server uses (pino). */
export type Logger = PinoLogger;

/** Field names whose values are credentials wherever they appear (up to two levels deep). */
const CREDENTIAL_FIELDS = [
  'authorization',
  'cookie',
  'password',
  'passwd',
  'token',
  'accessToken',
  'access_token',
  'refreshToken',
  'refresh_token',
  'idToken',
  'secret',
  'clientSecret',
  'client_secret',
  'apiKey',
  'api_key',
  'privateKey',
  'private_key',
  'connectionString',
];

/** pino redaction paths for {@link CREDENTIAL_FIELDS} at the top level and one or two levels down. */
export const REDACT_PATHS: readonly string[] = CREDENTIAL_FIELDS.flatMap((f) => [
  f,
  `*.${f}`,
  `*.*.${f}`,
]);

/** Options of {@link createLogger}. */
export interface LoggerOptions {
  level?: LevelWithSilent;
  /** Logger name, usually the server name. */
  name?: string;
  /** Extra paths to redact, e.g. `config.POSTGRES_URL`. */
  redact?: readonly string[];
  /** Where lines go; defaults to a synchronous writer on `dest` so nothing is lost on exit. */
  destination?: DestinationStream;
  /** File descriptor or path for the default synchronous writer (default 2, stderr). */
  dest?: number | string;
}

/** Every string of a log line's fields (keys too, errors' messages and stacks) with secrets replaced. */
function scrubDeep(value: unknown, depth = 0): Record<string, unknown> {
  const scrub = (v: unknown, d: number): unknown => {
    if (typeof v === 'string') return scrubSecrets(v).text;
    if (d > 8 || v === null || typeof v !== 'object') return v;
    if (Array.isArray(v)) return v.map((item) => scrub(item, d + 1));
    const out: Record<string, unknown> = {};
    const source =
      v instanceof Error ? { ...v, message: v.message, stack: v.stack, type: v.name } : v;
    for (const [key, inner] of Object.entries(source)) {
      out[scrubSecrets(key).text] = scrub(inner, d + 1);
    }
    return out;
  };
  return scrub(value, depth) as Record<string, unknown>;
}

/**
 * Creates the pino logger: JSON lines on stderr (stdout belongs to the protocol on stdio),
 * credential fields redacted, secret values scrubbed from every line. The stderr writer is synchronous: a log line is on its way
 * before the call that produced it returns, so a crash or signal never loses the tail.
 */
export function createLogger(options: LoggerOptions = {}): Logger {
  return pino(
    {
      level: options.level ?? 'info',
      ...(options.name === undefined ? {} : { name: options.name }),
      redact: { paths: [...REDACT_PATHS, ...(options.redact ?? [])], censor: '[secret]' },
      base: { pid: process.pid },
      timestamp: pino.stdTimeFunctions.isoTime,
      // Secret values are replaced in every string before the line is serialised (a value that
      // holds a secret's JSON-escaped spelling is escaped again in the line, past the forms the
      // last word knows), in the message as in the fields.
      formatters: { level: (label) => ({ level: label }), log: (object) => scrubDeep(object) },
      hooks: {
        logMethod(args, method) {
          method.apply(
            this,
            args.map((arg) => (typeof arg === 'string' ? scrubSecrets(arg).text : arg)) as never,
          );
        },
        // The last word on every line: configured secret values and known token formats are
        // replaced wherever they sit (an upstream error echoing a token, a URL in a stack trace).
        streamWrite: (line) => scrubSecrets(line).text,
      },
    },
    options.destination ?? pino.destination({ dest: options.dest ?? 2, sync: true }),
  );
}
