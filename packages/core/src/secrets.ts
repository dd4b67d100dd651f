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

/** Replaces known secret formats; returns the text and the kinds it found. */
export function scrubSecrets(text: string): { text: string; kinds: string[] } {
  if (!HINT.test(text)) return { text, kinds: [] };
  const kinds: string[] = [];
  let out = text;
  for (const { kind, pattern, replace } of PATTERNS) {
    const next = out.replace(pattern, replace ?? marker(kind));
    if (next !== out) {
      kinds.push(kind);
      out = next;
    }
  }
  return { text: out, kinds };
}
