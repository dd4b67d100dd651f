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
      formatters: { level: (label) => ({ level: label }) },
      // The last word on every line: configured secret values and known token formats are
      // replaced wherever they sit (an upstream error echoing a token, a URL in a stack trace).
      hooks: { streamWrite: (line) => scrubSecrets(line).text },
    },
    options.destination ?? pino.destination({ dest: options.dest ?? 2, sync: true }),
  );
}
