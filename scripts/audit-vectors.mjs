#!/usr/bin/env node
// Writes the audit-log test vectors of docs/audit-format.md into docs/audit-vectors/: valid logs
// (signed, resumed after a restart, with values that test canonical JSON) and one log of each
// damage kind, each made the way that damage happens, plus `expected.json` — the verdict a
// conforming verifier gives each (intact, or the damage kind at its line and seq) with the
// options it is run with. Each run makes a fresh test key pair and writes only its public half
// (the private half is thrown away: the vectors are fixed once committed). Run once and commit:
// `node scripts/audit-vectors.mjs` (the vectors test checks both verifiers against what is
// committed, not against a new run).
import { generateKeyPairSync } from 'node:crypto';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { format, resolveConfig } from 'prettier';
import {
  AuditLog,
  checkpointPayload,
  fileSink,
  findChainEnd,
  loadSigner,
  recordHash,
  signCheckpoint,
} from '@gatehouse/audit';

const OUT = fileURLToPath(new URL('../docs/audit-vectors/', import.meta.url));
mkdirSync(OUT, { recursive: true });
const work = mkdtempSync(join(tmpdir(), 'audit-vectors-'));

const pair = () => {
  const { privateKey, publicKey } = generateKeyPairSync('ed25519');
  return {
    private: privateKey.export({ type: 'pkcs8', format: 'pem' }).toString(),
    public: publicKey.export({ type: 'spki', format: 'pem' }).toString(),
  };
};
const key = pair();
const other = pair();
writeFileSync(join(OUT, 'test-key.pub.pem'), key.public);
writeFileSync(join(OUT, 'other-key.pub.pem'), other.public);

let clock = Date.parse('2026-12-01T09:00:00.000Z');
const now = () => new Date((clock += 1_000));
let ids = 0;
const entry = (action, extra = {}) => ({
  '@timestamp': now().toISOString(),
  event: {
    id: `00000000-0000-4000-8000-${String(++ids).padStart(12, '0')}`,
    kind: 'event',
    category: ['api'],
    type: ['access'],
    action,
    outcome: 'success',
    reason: 'ok',
  },
  ...extra,
});
const stop = () =>
  entry('gatehouse/stop', {
    event: {
      id: `00000000-0000-4000-8000-${String(++ids).padStart(12, '0')}`,
      kind: 'event',
      category: ['process'],
      type: ['end'],
      action: 'gatehouse/stop',
      outcome: 'success',
      reason: 'stopped',
    },
  });

/**
 * A log written by the real writer: `records` entries, then a stop; every `every` a checkpoint;
 * signed with `signer` (a private key PEM), or unsigned with `signer: null`.
 */
function writeLog(file, { records = 7, every = 3, signer = key.private, extra } = {}) {
  const log = new AuditLog({
    sinks: [fileSink({ path: file, maxBytes: 1e9, daily: false })],
    service: { name: 'vectors', version: '1.0.0' },
    checkpointEvery: every,
    now,
    ...(signer === null ? {} : { signer: loadSigner(signer) }),
    ...(findChainEnd(file) === undefined ? {} : { resume: findChainEnd(file) }),
  });
  for (let i = 0; i < records; i++) {
    log.append(
      entry('tools/call', {
        user: { id: 'alice' },
        mcp: { name: `vectors_tool_${i}` },
        ...(i === 0 && extra !== undefined ? { gatehouse: extra } : {}),
      }),
    );
  }
  log.append(stop());
  log.close();
  return readFileSync(file, 'utf8');
}

const lines = (text) => text.split('\n').filter(Boolean);
const parse = (text) => lines(text).map((l) => JSON.parse(l));
const text = (records) => `${records.map((r) => JSON.stringify(r)).join('\n')}\n`;

/** Recomputes the chain from `list` (and re-signs with `signer`, or keeps signatures as they are). */
function reseal(list, signer) {
  let prev;
  list.forEach((record, i) => {
    record.audit.seq = i;
    record.audit.prev_hash = prev?.audit.hash ?? null;
    const checkpoint = record.audit.checkpoint;
    if (checkpoint !== undefined && prev !== undefined) {
      checkpoint.covers = { seq: prev.audit.seq, hash: prev.audit.hash };
      if (signer !== undefined) {
        checkpoint.signature = signCheckpoint(
          loadSigner(signer),
          checkpointPayload(record.audit.stream, prev.audit.seq, prev.audit.hash, checkpoint.time),
        );
      }
    }
    record.audit.hash = recordHash(record);
    prev = record;
  });
  return list;
}

const vectors = [];
function vector(name, content, expected, options = {}) {
  writeFileSync(join(OUT, `${name}.jsonl`), content);
  vectors.push({ file: `${name}.jsonl`, ...options, expected });
}
const base = writeLog(join(work, 'base.jsonl'));
const baseRecords = () => parse(base);
const withKey = { keys: ['test-key.pub.pem'] };

// Valid logs.
vector('valid-signed', base, { intact: true, records: 11 }, withKey);
const restarted = join(work, 'restarted.jsonl');
writeLog(restarted, { records: 2 });
vector('valid-resumed', writeLog(restarted, { records: 2 }), { intact: true, records: 8 }, withKey);
vector(
  'valid-values',
  writeLog(join(work, 'values.jsonl'), {
    records: 2,
    extra: {
      // What canonical JSON must get right: key order by UTF-16 code units, escapes, numbers.
      keys: { b: 1, a: 2, B: 3, é: 4, '\u{1F600}': 5, '\uFF5E': 6, '': 7 },
      strings: [
        'line\nbreak',
        'tab\t',
        'quote " back \\',
        'nul \u0000',
        '\u2028\u2029\u0085',
        'é 日本 👩‍💻',
        '\u007f',
      ],
      numbers: [
        0,
        -0,
        1,
        -1,
        1.5,
        0.1,
        1e21,
        1e-7,
        123456789012,
        2 ** 53 - 1,
        5e-324,
        1.7976931348623157e308,
      ],
      literals: [true, false, null],
      nested: { z: [], y: {}, x: [{ b: 2, a: 1 }] },
    },
  }),
  { intact: true, records: 4 },
  withKey,
);
vector('valid-unsigned', writeLog(join(work, 'unsigned.jsonl'), { signer: null }), {
  intact: true,
  records: 11,
});

// Damaged logs, each as it happens.
{
  const r = baseRecords();
  r[2].user.id = 'mallory'; // a value changed, hash left
  vector('modified', text(r), { intact: false, kind: 'modified', line: 3, seq: 2 }, withKey);
}
{
  const r = baseRecords();
  r[2].user.id = 'mallory';
  r[2].audit.hash = recordHash(r[2]); // and its hash recomputed: the next record no longer chains
  vector(
    'modified-rehashed',
    text(r),
    { intact: false, kind: 'modified', line: 4, seq: 3 },
    withKey,
  );
}
{
  const r = baseRecords();
  r.splice(4, 1);
  vector('deleted', text(r), { intact: false, kind: 'deleted', line: 5, seq: 5 }, withKey);
}
{
  const r = baseRecords();
  r.splice(5, 0, structuredClone(r[1]));
  vector('inserted', text(r), { intact: false, kind: 'inserted', line: 6, seq: 1 }, withKey);
}
{
  const r = baseRecords();
  [r[5], r[6]] = [r[6], r[5]];
  vector('reordered', text(r), { intact: false, kind: 'reordered', line: 6, seq: 6 }, withKey);
}
{
  const r = baseRecords().slice(0, 6);
  vector('truncated', text(r), { intact: false, kind: 'truncated', line: 6, seq: 5 }, withKey);
}
{
  const cut = base.slice(0, base.length - 40);
  vector('torn', cut, { intact: false, kind: 'truncated', line: 11 }, withKey);
}
{
  // A writer killed mid-write, and restarted: the torn bytes stand on a line of their own, and
  // the restarted writer's first record declares them (audit.resumed.damaged_tail).
  const file = join(work, 'killed.jsonl');
  const log = new AuditLog({
    sinks: [fileSink({ path: file, maxBytes: 1e9, daily: false })],
    service: { name: 'vectors', version: '1.0.0' },
    checkpointEvery: 3,
    now,
    signer: loadSigner(key.private),
  });
  for (let i = 0; i < 4; i++) log.append(entry('tools/call', { user: { id: 'bob' } }));
  log.flush();
  const written = readFileSync(file, 'utf8');
  writeFileSync(file, written.slice(0, written.length - 30)); // killed 30 bytes before the end
  rmSync(`${file}.lock`); // what the killed writer left (here it is this very process)
  vector(
    'valid-torn-declared',
    writeLog(file, { records: 2 }),
    { intact: true, records: 8, declared: { torn: 1, lost: 0 } },
    withKey,
  );
}
{
  // A write that failed part-way (a full disk): the record never made it whole, the next one
  // declares the loss. Made with a second sink that refuses one line, then that line torn.
  const file = join(work, 'lost.jsonl');
  let n = 0;
  const refusing = {
    name: 'refusing',
    write: () => {
      if (++n === 4) throw new Error('ENOSPC: no space left on device');
    },
    close: () => undefined,
  };
  const log = new AuditLog({
    sinks: [fileSink({ path: file, maxBytes: 1e9, daily: false }), refusing],
    service: { name: 'vectors', version: '1.0.0' },
    checkpointEvery: 3,
    now,
    signer: loadSigner(key.private),
  });
  for (let i = 0; i < 6; i++) log.append(entry('tools/call', { user: { id: 'carol' } }));
  log.append(stop());
  log.close();
  const all = lines(readFileSync(file, 'utf8'));
  const torn = all.with(3, all[3].slice(0, 100)); // the lost record, as the full disk left it
  vector(
    'valid-lost-declared',
    `${torn.join('\n')}\n`,
    { intact: true, records: 9, declared: { torn: 1, lost: 1 } },
    withKey,
  );
}
{
  const r = baseRecords();
  const at = r.findIndex((x) => x.event.action === 'audit/checkpoint');
  const sig = Buffer.from(r[at].audit.checkpoint.signature, 'base64');
  sig[0] ^= 1;
  r[at].audit.checkpoint.signature = sig.toString('base64');
  reseal(r); // the chain recomputed, the signature left wrong
  vector(
    'bad-signature',
    text(r),
    { intact: false, kind: 'bad_signature', line: at + 1, seq: at },
    withKey,
  );
}
vector(
  'untrusted-key',
  writeLog(join(work, 'other.jsonl'), { signer: other.private }),
  { intact: false, kind: 'untrusted_key', line: 4, seq: 3 },
  withKey,
);
vector(
  'unsigned-checkpoint',
  writeLog(join(work, 'unsigned2.jsonl'), { signer: null }),
  {
    intact: false,
    kind: 'unsigned_checkpoint',
    line: 4,
    seq: 3,
  },
  withKey,
);
{
  // The host's owner rewrote record 4 and re-signed with the host's key; the witness (a syslog
  // server) had received the checkpoints as they were made.
  const witness = baseRecords()
    .filter((x) => x.event.action === 'audit/checkpoint')
    .map((x) => `<110>1 ${x['@timestamp']} host vectors 1 checkpoint - ${JSON.stringify(x)}`)
    .join('\n');
  writeFileSync(join(OUT, 'rewritten.witness.syslog'), `${witness}\n`);
  const r = baseRecords();
  r[4].user.id = 'mallory';
  reseal(r, key.private);
  vector('rewritten-alone', text(r), { intact: true, records: 11 }, withKey);
  vector(
    'rewritten',
    text(r),
    { intact: false, kind: 'rewritten', line: 7, seq: 6 },
    {
      ...withKey,
      witness: ['rewritten.witness.syslog'],
    },
  );
}

// In the repository's style, so `prettier --check .` (part of npm test) passes as written.
const expectedFile = join(OUT, 'expected.json');
const style = await resolveConfig(expectedFile);
writeFileSync(
  expectedFile,
  await format(JSON.stringify({ vectors }), { ...style, filepath: expectedFile }),
);
rmSync(work, { recursive: true, force: true });
process.stdout.write(`audit-vectors: ${vectors.length} vectors in ${OUT}\n`);
