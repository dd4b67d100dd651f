import { spawnSync } from 'node:child_process';
import { generateKeyPairSync, randomUUID } from 'node:crypto';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Writable } from 'node:stream';
import { Ajv2020 } from 'ajv/dist/2020.js';
import addFormats from 'ajv-formats';
import {
  AuditLog,
  auditRecordSchema,
  fileSink,
  loadSigner,
  main,
  recordHash,
} from '../src/index.js';
import type { AuditEntry, AuditRecord } from '../src/index.js';

export const SERVICE = { name: 'demo', version: '1.0.0' };

export function tempDir(): string {
  return mkdtempSync(join(tmpdir(), 'gatehouse-audit-test-'));
}

/** A fresh Ed25519 key pair as PEM strings. */
export function keyPair(): { privatePem: string; publicPem: string } {
  const { privateKey, publicKey } = generateKeyPairSync('ed25519');
  return {
    privatePem: privateKey.export({ type: 'pkcs8', format: 'pem' }).toString(),
    publicPem: publicKey.export({ type: 'spki', format: 'pem' }).toString(),
  };
}

const principals = ['alice', 'bob', 'carol'];
const tools = [
  { name: 'github_get_issue', access: 'read' as const },
  { name: 'slack_post_message', access: 'write' as const },
  { name: 'postgres_query', access: 'read' as const },
];
const reasons = [
  'ok',
  'ok',
  'ok',
  'ok',
  'denied',
  'tool_error',
  'upstream_error',
  'timeout',
] as const;

/** A plausible tools/call entry, varied by `i`. */
export function callEntry(
  i: number,
  at = new Date(Date.UTC(2026, 10, 29, 8, 0, 0) + i * 60_000),
): AuditEntry {
  const tool = tools[i % tools.length]!;
  const reason = reasons[i % reasons.length]!;
  return {
    '@timestamp': at.toISOString(),
    event: {
      id: randomUUID(),
      kind: 'event',
      category: ['api'],
      type: [reason === 'denied' ? 'denied' : tool.access === 'write' ? 'creation' : 'access'],
      action: 'tools/call',
      outcome: reason === 'ok' ? 'success' : 'failure',
      reason,
      duration: 1_000_000 + i,
    },
    user: { id: principals[i % principals.length]! },
    auth: { method: 'local' },
    mcp: {
      request_id: i,
      era: 'legacy',
      transport: 'stdio',
      name: tool.name,
      protocol_version: '2025-11-25',
    },
    tool: {
      name: tool.name,
      definition_hash: `sha256:${'a'.repeat(64)}`,
      access: tool.access,
      read_only: tool.access === 'read',
    },
    target: { resource: `github:acme/repo-${i % 4}#${i}` },
    ...(reason === 'ok' ? {} : { error: { type: 'ToolError', message: `failure <b>${i}</b>` } }),
  };
}

/** A lifecycle entry. */
export function lifecycleEntry(
  action: 'gatehouse/start' | 'gatehouse/stop',
  at = new Date(),
): AuditEntry {
  return {
    '@timestamp': at.toISOString(),
    event: {
      id: randomUUID(),
      kind: 'event',
      category: ['process'],
      type: [action === 'gatehouse/start' ? 'start' : 'end'],
      action,
      outcome: 'success',
      reason: action === 'gatehouse/start' ? 'started' : 'stopped',
    },
  };
}

/** Writes a closed log (start, `calls` calls, stop, closing checkpoint) and returns its path. */
export function writeLog(
  options: {
    calls?: number;
    checkpointEvery?: number;
    signerPem?: string;
    dir?: string;
    maxBytes?: number;
  } = {},
): string {
  const dir = options.dir ?? tempDir();
  const path = join(dir, 'audit.jsonl');
  const log = new AuditLog({
    sinks: [fileSink({ path, maxBytes: options.maxBytes ?? 1 << 30, daily: false })],
    service: SERVICE,
    checkpointEvery: options.checkpointEvery ?? 10,
    ...(options.signerPem ? { signer: loadSigner(options.signerPem) } : {}),
  });
  log.append(lifecycleEntry('gatehouse/start', new Date(Date.UTC(2026, 10, 29, 7, 59))));
  for (let i = 0; i < (options.calls ?? 25); i++) log.append(callEntry(i));
  log.append(lifecycleEntry('gatehouse/stop', new Date(Date.UTC(2026, 10, 29, 23, 0))));
  log.close();
  return path;
}

export const readJsonLines = (path: string): AuditRecord[] =>
  readFileSync(path, 'utf8')
    .split('\n')
    .filter(Boolean)
    .map((l) => JSON.parse(l) as AuditRecord);

export const writeJsonLines = (path: string, records: readonly unknown[]): void =>
  writeFileSync(path, records.map((r) => `${JSON.stringify(r)}\n`).join(''));

/** Recomputes a record's hash after an edit (what a careful attacker would do). */
export function rehash(record: AuditRecord): AuditRecord {
  record.audit.hash = recordHash(record);
  return record;
}

/** Runs the CLI in-process; returns exit code and output. */
export async function cli(...argv: string[]): Promise<{ code: number; out: string; err: string }> {
  let out = '';
  let err = '';
  const sink = (append: (s: string) => void) =>
    new Writable({
      write(chunk: Buffer, _e, done) {
        append(chunk.toString());
        done();
      },
    });
  const code = await main(
    argv,
    sink((s) => (out += s)),
    sink((s) => (err += s)),
  );
  return { code, out, err };
}

const ajv = new Ajv2020({ allErrors: true, strict: false });
addFormats.default(ajv);
const validate = ajv.compile(auditRecordSchema);

/** Schema errors of a record (empty when valid). */
export function schemaErrors(record: unknown): string[] {
  return validate(record)
    ? []
    : (validate.errors ?? []).map((e) => `${e.instancePath} ${e.message}`);
}

/** A verdict in the test vectors' form (docs/audit-format.md §7), with what the writer declared. */
export interface Verdict {
  intact: boolean;
  records?: number;
  kind?: string;
  line?: number;
  seq?: number;
  declared?: { torn: number; lost: number };
}

const PYTHON_VERIFIER = fileURLToPath(new URL('../python/verify.py', import.meta.url));

const options = (keys: string[] = [], witness: string[] = []) => [
  ...keys.flatMap((k) => ['--key', k]),
  ...witness.flatMap((w) => ['--witness', w]),
];

/** The reference verifier's verdict, in the vectors' form. */
export async function reference(
  files: string[],
  keys?: string[],
  witness?: string[],
): Promise<Verdict> {
  let out = '';
  const sink = { write: (c: string) => ((out += c), true), once: () => undefined };
  await main(
    ['verify', '--json', ...options(keys, witness), ...files],
    sink as never,
    sink as never,
  );
  return verdictOf(JSON.parse(out) as Reported);
}

export type Reported = {
  intact: boolean;
  records: number;
  damage?: { kind: string; line: number; seq?: number };
  /** Node's report field and the Python verifier's key for what the writer declared. */
  declared?: {
    tornLines?: number;
    lostRecords?: number;
    torn_lines?: number;
    lost_records?: number;
  };
};
export const verdictOf = (r: Reported): Verdict => {
  const torn = r.declared?.tornLines ?? r.declared?.torn_lines ?? 0;
  const lost = r.declared?.lostRecords ?? r.declared?.lost_records ?? 0;
  const declared = torn + lost > 0 ? { declared: { torn, lost } } : {};
  return r.intact
    ? { intact: true, records: r.records, ...declared }
    : {
        intact: false,
        kind: r.damage!.kind,
        line: r.damage!.line,
        ...(r.damage!.seq === undefined ? {} : { seq: r.damage!.seq }),
        ...declared,
      };
};

/** The Python verifier's verdicts: one log, or (`each`) every file as a log of its own. */
export function python(
  files: string[],
  keys?: string[],
  witness?: string[],
  each = false,
): Verdict[] {
  const run = spawnSync(
    'python3',
    [PYTHON_VERIFIER, ...options(keys, witness), ...(each ? ['--each'] : []), ...files],
    { encoding: 'utf8' },
  );
  if (run.status === 2 || run.stdout === '') throw new Error(`verify.py failed: ${run.stderr}`);
  return run.stdout
    .trim()
    .split('\n')
    .map((l) => verdictOf(JSON.parse(l) as Reported));
}

/** A small seeded generator (mulberry32): the same damage on every run. */
export function seeded(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = Math.imul(a ^ (a >>> 15), 1 | a);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}
