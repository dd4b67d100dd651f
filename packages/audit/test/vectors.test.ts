// The audit log format (docs/audit-format.md) as others would check it: every committed test
// vector gets its expected verdict from `gatehouse-audit verify` and from the independent Python
// verifier written from the specification (packages/audit/python/verify.py); and the two agree on
// generated damage of a log the real writer made — every kind, at random places.
import { spawnSync } from 'node:child_process';
import { generateKeyPairSync } from 'node:crypto';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { AuditLog, fileSink, loadSigner } from '../src/index.js';
import { python, reference, seeded } from './helpers.js';
import type { Verdict } from './helpers.js';

const VECTORS = fileURLToPath(new URL('../../../docs/audit-vectors/', import.meta.url));

interface Vector {
  file: string;
  keys?: string[];
  witness?: string[];
  expected: Verdict;
}

const { vectors } = JSON.parse(readFileSync(join(VECTORS, 'expected.json'), 'utf8')) as {
  vectors: Vector[];
};

describe('the test vectors (docs/audit-vectors)', () => {
  it('cover every damage kind the specification names, and valid logs', () => {
    const kinds = new Set(vectors.map((v) => v.expected.kind ?? 'intact'));
    for (const kind of [
      'intact',
      'modified',
      'deleted',
      'inserted',
      'reordered',
      'truncated',
      'bad_signature',
      'untrusted_key',
      'unsigned_checkpoint',
      'rewritten',
    ]) {
      expect(kinds.has(kind), kind).toBe(true);
    }
  });

  it('are all files git keeps: none of them matches a .gitignore pattern (a *.log once did)', () => {
    const named = [
      'expected.json',
      ...vectors.flatMap((v) => [v.file, ...(v.keys ?? []), ...(v.witness ?? [])]),
    ];
    const ignored = named.filter(
      (name) =>
        spawnSync('git', ['check-ignore', '--no-index', '-q', join(VECTORS, name)]).status === 0,
    );
    expect(ignored).toEqual([]);
  });

  it.each(vectors.map((v) => [v.file, v] as const))(
    '%s: both verifiers give the expected verdict',
    async (_, v) => {
      const at = (names?: string[]) => names?.map((n) => join(VECTORS, n));
      const files = [join(VECTORS, v.file)];
      const expected = v.expected.intact
        ? v.expected
        : { ...v.expected, ...(v.expected.seq === undefined ? {} : { seq: v.expected.seq }) };
      expect(await reference(files, at(v.keys), at(v.witness))).toEqual(expected);
      expect(python(files, at(v.keys), at(v.witness))).toEqual([expected]);
    },
  );
});

describe('the two verifiers on generated damage', () => {
  const dir = mkdtempSync(join(tmpdir(), 'vectors-'));
  const { privateKey, publicKey } = generateKeyPairSync('ed25519');
  const pub = join(dir, 'public.pem');
  writeFileSync(pub, publicKey.export({ type: 'spki', format: 'pem' }).toString());
  const file = join(dir, 'audit.jsonl');
  const log = new AuditLog({
    sinks: [fileSink({ path: file, maxBytes: 1e9, daily: false })],
    service: { name: 'generated', version: '1' },
    signer: loadSigner(privateKey.export({ type: 'pkcs8', format: 'pem' }).toString()),
    checkpointEvery: 4,
  });
  for (let i = 0; i < 30; i++) {
    log.append({
      '@timestamp': new Date(Date.UTC(2026, 11, 1, 9, 0, i)).toISOString(),
      event: {
        id: `generated-${i}`,
        kind: 'event',
        category: ['api'],
        type: ['access'],
        action: 'tools/call',
        outcome: i % 5 === 0 ? 'failure' : 'success',
        reason: i % 5 === 0 ? 'denied' : 'ok',
      },
      user: { id: `user-${i % 3}` },
      mcp: { name: `tool_${i}`, text: `line ${i} \u2028 "quoted" 日本 ${i / 7}` } as never,
    });
  }
  log.append({
    '@timestamp': new Date(Date.UTC(2026, 11, 1, 9, 1)).toISOString(),
    event: {
      id: 'generated-stop',
      kind: 'event',
      category: ['process'],
      type: ['end'],
      action: 'gatehouse/stop',
      outcome: 'success',
      reason: 'stopped',
    },
  });
  log.close();
  const lines = readFileSync(file, 'utf8').split('\n').filter(Boolean);

  const random = seeded(2612);
  const pick = (n: number) => Math.floor(random() * n);
  const mutations: Array<[string, (l: string[]) => string[]]> = [
    ['delete a line', (l) => l.toSpliced(pick(l.length), 1)],
    [
      'duplicate a line',
      (l) => {
        const i = pick(l.length);
        return l.toSpliced(pick(l.length), 0, l[i]!);
      },
    ],
    [
      'swap two neighbours',
      (l) => {
        const i = pick(l.length - 1);
        const c = [...l];
        [c[i], c[i + 1]] = [c[i + 1]!, c[i]!];
        return c;
      },
    ],
    [
      'change a value',
      (l) => {
        const i = pick(l.length);
        return l.with(i, l[i]!.replace(/user-\d/, 'user-9').replace('"success"', '"failure"'));
      },
    ],
    ['cut the end', (l) => l.slice(0, 1 + pick(l.length - 1))],
    ['tear the last line', (l) => [...l.slice(0, -1), l.at(-1)!.slice(0, 20)]],
    ['garble a line', (l) => l.with(pick(l.length), '{"not": json')],
  ];

  it('agree on the intact log, and on 140 damaged copies of it (7 kinds × 20 places)', async () => {
    expect(await reference([file], [pub])).toEqual({ intact: true, records: lines.length });
    expect(python([file], [pub])).toEqual([{ intact: true, records: lines.length }]);
    const cases: Array<{ name: string; file: string }> = [];
    for (const [name, mutate] of mutations) {
      for (let k = 0; k < 20; k++) {
        const damaged = join(dir, `damaged-${cases.length}.jsonl`);
        const torn = name === 'tear the last line';
        writeFileSync(damaged, `${mutate(lines).join('\n')}${torn ? '' : '\n'}`);
        cases.push({ name: `${name} #${k}`, file: damaged });
      }
    }
    const theirs = python(
      cases.map((c) => c.file),
      [pub],
      undefined,
      true,
    );
    expect(theirs).toHaveLength(cases.length);
    for (const [i, c] of cases.entries()) {
      const ours = await reference([c.file], [pub]);
      expect(ours.intact, c.name).toBe(false);
      expect(theirs[i], `${c.name}: ${JSON.stringify(ours)}`).toEqual(ours);
    }
  });
});
