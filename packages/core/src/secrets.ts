/**
 * The secret scrubber shared by the sanitiser (everything that leaves a server) and the audit
 * trail (error messages, redacted arguments): known credential formats are replaced by a
 * marker naming their kind, so a leaked token never travels further.
 */

interface SecretPattern {
  kind: string;
  pattern: RegExp;
  /** Replacement; `$1`… refer to the pattern's groups. Default: the marker. */
  replace?: string;
}

const marker = (kind: string): string => `[REDACTED:${kind}]`;

const PATTERNS: readonly SecretPattern[] = [
  {
    kind: 'private-key',
    pattern: /-----BEGIN [A-Z0-9 ]*PRIVATE KEY-----[\s\S]*?-----END [A-Z0-9 ]*PRIVATE KEY-----/g,
  },
  { kind: 'github-token', pattern: /\bgh[pousr]_[A-Za-z0-9]{30,255}\b/g },
  { kind: 'github-token', pattern: /\bgithub_pat_[A-Za-z0-9_]{22,255}\b/g },
  { kind: 'slack-token', pattern: /\bxox[abposre]-[A-Za-z0-9-]{10,}/g },
  {
    kind: 'slack-webhook',
    pattern: /https:\/\/hooks\.slack\.com\/(?:services|workflows|triggers)\/[A-Za-z0-9/_-]{20,}/g,
  },
  { kind: 'atlassian-token', pattern: /\bAT[A-Z]{2}T3[A-Za-z0-9_=-]{20,}/g },
  { kind: 'jwt', pattern: /\beyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}/g },
  { kind: 'aws-access-key', pattern: /\b(?:AKIA|ASIA|AIDA|AROA)[A-Z0-9]{16}\b/g },
  {
    kind: 'aws-secret-key',
    pattern:
      /(aws_secret_access_key|secretAccessKey|AWS_SECRET_ACCESS_KEY)(["']?\s*[:=]\s*["']?)[A-Za-z0-9/+=]{40}/g,
    replace: `$1$2${marker('aws-secret-key')}`,
  },
  {
    kind: 'url-credentials',
    pattern: /\b([a-z][a-z0-9+.-]*:\/\/)([^\s:/@]+):([^\s@/]+)@/gi,
    replace: `$1$2:${marker('password')}@`,
  },
  {
    kind: 'bearer',
    pattern: /\b(Bearer|Basic)\s+[A-Za-z0-9._~+/-]{16,}=*/g,
    replace: `$1 ${marker('credential')}`,
  },
];

// A cheap pre-check: text without any of these fragments cannot hold a known secret.
const HINT =
  /PRIVATE KEY|gh[pousr]_|github_pat_|xox|hooks\.slack|T3|eyJ|AKIA|ASIA|AIDA|AROA|secret|SECRET|:\/\/[^\s/]*@|Bearer|Basic/;

/** Configured secret values in every form they may take in output, by variable name. */
const known = new Map<string, string>();
/** All of {@link known}, longest first, as one pattern. */
let configured: RegExp | undefined;

/** Shorter values are not registered: replacing them everywhere would mangle ordinary text. */
export const MIN_SECRET_LENGTH = 6;

/** A value as the inside of a JSON string, the way one encoder or another writes it. */
function jsonSpellings(value: string): string[] {
  const escaped = JSON.stringify(value).slice(1, -1);
  const hex = (c: string, upper: boolean) => {
    const code = c.charCodeAt(0).toString(16).padStart(4, '0');
    return `\\u${upper ? code.toUpperCase() : code}`;
  };
  // ECMAScript's JSON.stringify; ASCII-only encoders (Python's json.dumps, Go's HTML-safe
  // escaping) spell every other character \uXXXX, in either case; PHP escapes the slash.
  const ascii = (upper: boolean) => escaped.replace(/[^\u0020-\u007e]/g, (c) => hex(c, upper));
  return [escaped, ascii(false), ascii(true), escaped.replaceAll('/', '\\/')];
}

/**
 * The forms a value takes on its way out: as is, URL-encoded or -decoded, JSON-escaped (in the
 * spellings of {@link jsonSpellings}), and JSON-escaped twice (a JSON text inside a JSON string,
 * as a log line holds a logged body).
 */
function forms(value: string): string[] {
  const out = new Set([value, encodeURIComponent(value)]);
  try {
    out.add(decodeURIComponent(value));
  } catch {
    // not URL-encoded
  }
  for (const v of [...out]) {
    for (const once of jsonSpellings(v)) {
      out.add(once);
      out.add(JSON.stringify(once).slice(1, -1));
    }
  }
  return [...out];
}

/** A URL's password and user:password (a connection URL's secret part), decoded and raw. */
function urlParts(value: string): string[] {
  try {
    const url = new URL(value);
    if (url.password === '') return [];
    return [url.password, `${url.username}:${url.password}`];
  } catch {
    return [];
  }
}

/**
 * Registers the values of configured secrets (tokens, passwords, connection URLs, keys; a list
 * of values for the operator's own) under the name of their variable: from then on {@link scrubSecrets} replaces each — and its
 * URL-encoded, URL-decoded and JSON-escaped forms, and a URL's password — with
 * `[REDACTED:NAME]`, wherever output leaves the process (tool results, errors, logs, audit).
 * (Forms shorter than {@link MIN_SECRET_LENGTH} are not: the server warns about such secrets.)
 */
export function registerSecretValues(
  values: Readonly<Record<string, string | readonly string[] | undefined>>,
): void {
  for (const [name, given] of Object.entries(values)) {
    for (const value of given === undefined ? [] : typeof given === 'string' ? [given] : given) {
      if (value === '') continue;
      for (const form of [value, ...urlParts(value)].flatMap(forms)) {
        if (form.length >= MIN_SECRET_LENGTH) known.set(form, name);
      }
    }
  }
  const all = [...known.keys()].sort((a, b) => b.length - a.length);
  configured =
    all.length === 0
      ? undefined
      : new RegExp(all.map((v) => v.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')).join('|'), 'g');
}

/** Replaces configured secret values and known secret formats; returns the text and the kinds it found. */
export function scrubSecrets(text: string): { text: string; kinds: string[] } {
  const kinds: string[] = [];
  let out = text;
  if (configured !== undefined) {
    const next = out.replace(configured, (match) => marker(known.get(match) ?? 'secret'));
    if (next !== out) {
      kinds.push('configured');
      out = next;
    }
  }
  if (!HINT.test(out)) return { text: out, kinds };
  for (const { kind, pattern, replace } of PATTERNS) {
    const next = out.replace(pattern, replace ?? marker(kind));
    if (next !== out) {
      kinds.push(kind);
      out = next;
    }
  }
  return { text: out, kinds };
}

/**
 * The kinds of secret any string inside `value` carries (object keys included), for refusing
 * an outgoing write that would carry one: `configured` for a configured secret's value, else
 * the format (`github-token`, `jwt`, …). Empty when there is none.
 */
export function secretKinds(value: unknown, depth = 0): string[] {
  if (typeof value === 'string') return scrubSecrets(value).kinds;
  if (depth > 32 || typeof value !== 'object' || value === null) return [];
  const found = new Set<string>();
  for (const [key, item] of Array.isArray(value) ? value.entries() : Object.entries(value)) {
    if (typeof key === 'string') for (const k of scrubSecrets(key).kinds) found.add(k);
    for (const k of secretKinds(item, depth + 1)) found.add(k);
  }
  return [...found];
}
