import { createPublicKey } from 'node:crypto';
import { keyIdOf, recordHash } from '../src/chain.js';
import { canonicalJson } from '../src/canonical.js';
import { existsSync, readFileSync, readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { AuditLog, fileSink, findChainEnd, loadSigner } from '../src/index.js';
import {
  SERVICE,
  callEntry,
  cli,
  keyPair,
  lifecycleEntry,
  readJsonLines,
  rehash,
  schemaErrors,
  tempDir,
  writeJsonLines,
  writeLog,
} from './helpers.js';

describe('canonical JSON', () => {
  it('sorts every object, keeps arrays in order, and writes the rest as JSON.stringify does', () => {
    const parsed = JSON.parse('{"b":1,"__proto__":{"y":1,"x":2},"a":[3,{"d":1,"c":2}]}') as unknown;
    expect(canonicalJson(parsed)).toBe('{"__proto__":{"x":2,"y":1},"a":[3,{"c":2,"d":1}],"b":1}');
    expect(
      canonicalJson({ z: undefined, y: [undefined, Number.NaN], x: new Date(0), w: 'é"\n' }),
    ).toBe('{"w":"é\\"\\n","x":"1970-01-01T00:00:00.000Z","y":[null,null]}');
    const input = { b: { d: 1, c: 2 }, a: 1 };
    canonicalJson(input);
    expect(Object.keys(input)).toEqual(['b', 'a']); // the input is not reordered
  });
});

describe('a clean log', () => {
  it('writes each record as canonical JSON, serialised once, whose hash recomputes', () => {
    const path = writeLog({ calls: 12 });
    const lines = readFileSync(path, 'utf8').trimEnd().split('\n');
    for (const line of lines) {
      const record = JSON.parse(line) as Parameters<typeof recordHash>[0];
      expect(canonicalJson(record)).toBe(line);
      expect(recordHash(record)).toBe(record.audit.hash);
    }
  });

  it('puts the hash in its canonical place whatever precedes the audit member', () => {
    // The line is the hashed text with the hash inserted: members before `audit` that look like
    // it, none at all, undefined ones, keys out of order, a resumed chain and a checkpoint.
    const lines: string[] = [];
    const log = new AuditLog({
      sinks: [{ name: 'memory', write: (line) => lines.push(line), close: () => undefined }],
      service: SERVICE,
      resume: { seq: 41, hash: `sha256:${'e'.repeat(64)}`, damagedTail: true },
      checkpointEvery: 2,
    });
    const tricky = {
      ...callEntry(1),
      args: {
        shape: { audit: { prev_hash: 'string', hash: 'string' }, '"audit":{': 'string' },
        sha256: `sha256:${'b'.repeat(64)}`,
        redacted: { z: undefined, audit: '"audit":{"prev_hash":null}', at: new Date(0) },
      },
      AAA: undefined,
      '!first': { b: 1, a: 2 },
    } as unknown as Parameters<typeof log.append>[0];
    const { '@timestamp': _dropped, ...bare } = callEntry(2);
    log.append(tricky);
    log.append(bare as Parameters<typeof log.append>[0]); // followed by a checkpoint
    log.append({ ...callEntry(3), args: { shape: {}, sha256: `sha256:${'c'.repeat(64)}` } });
    expect(lines).toHaveLength(4);
    for (const line of lines) {
      const record = JSON.parse(line) as Parameters<typeof recordHash>[0];
      expect(`${canonicalJson(record)}\n`).toBe(line);
      expect(recordHash(record)).toBe(record.audit.hash);
    }
    const [first, , checkpoint] = lines.map((l) => JSON.parse(l) as Record<string, any>);
    expect(first!.audit.resumed).toEqual({
      seq: 41,
      hash: `sha256:${'e'.repeat(64)}`,
      damaged_tail: true,
    });
    expect(checkpoint!.audit.checkpoint.covers.seq).toBe(43);
  });

  it('verifies as intact, with every record schema-valid', async () => {
    const { privatePem, publicPem } = keyPair();
    const path = writeLog({ calls: 25, signerPem: privatePem });
    const records = readJsonLines(path);
    expect(records.flatMap(schemaErrors)).toEqual([]);
    expect(records.map((r) => r.audit.seq)).toEqual(records.map((_, i) => i));
    expect(records.at(-1)!.event.action).toBe('audit/checkpoint');
    expect(records.at(-2)!.event.action).toBe('gatehouse/stop');
    const keyFile = join(tempDir(), 'pub.pem');
    writeFileSync(keyFile, publicPem);
    const result = await cli('verify', '--key', keyFile, path);
    expect(result.code).toBe(0);
    expect(result.out).toMatch(/^intact: 30 records in 1 chain\(s\)/);
    // 25 calls + start + stop = 27 records → checkpoints after 10, 20 and the closing one.
    // …and names the key that verified them (the id `gatehouse-audit keygen` prints).
    expect(result.out).toContain(
      `checkpoints: 3 (3 signed, 3 signature(s) verified with key ${keyIdOf(createPublicKey(publicPem))})`,
    );
  });

  it('warns when signatures cannot be checked, and refuses an untrusted key', async () => {
    const path = writeLog({ signerPem: keyPair().privatePem });
    const unchecked = await cli('verify', path);
    expect(unchecked.code).toBe(0);
    expect(unchecked.out).toContain('not checked; pass --key');
    const other = join(tempDir(), 'other.pem');
    writeFileSync(other, keyPair().publicPem);
    const untrusted = await cli('verify', '--key', other, path);
    expect(untrusted.code).toBe(1);
    expect(untrusted.out).toContain('DAMAGED (untrusted_key)');
  });
});

/** Tampers with a copy of a clean log and returns what verify says. */
async function tamper(edit: (records: any[]) => unknown[], options: { keyed?: boolean } = {}) {
  const { privatePem, publicPem } = keyPair();
  const path = writeLog({ calls: 25, signerPem: privatePem });
  writeJsonLines(path, edit(readJsonLines(path)));
  const keyFile = join(tempDir(), 'pub.pem');
  writeFileSync(keyFile, publicPem);
  const result = await cli(
    'verify',
    '--json',
    ...(options.keyed === false ? [] : ['--key', keyFile]),
    path,
  );
  return { code: result.code, report: JSON.parse(result.out) };
}

describe('each kind of damage is detected and named', () => {
  it('modified: a field changed in place', async () => {
    const { code, report } = await tamper((rs) => {
      rs[7].user.id = 'mallory';
      return rs;
    });
    expect(code).toBe(1);
    expect(report.damage).toMatchObject({ kind: 'modified', line: 8, seq: 7 });
  });

  it('modified: a record rewritten with a recomputed hash', async () => {
    const { report } = await tamper((rs) => {
      rs[7].event.outcome = 'success';
      rehash(rs[7]);
      return rs;
    });
    expect(report.damage).toMatchObject({ kind: 'modified', line: 9, seq: 8 });
    expect(report.damage.message).toContain(':8) was rewritten');
  });

  it('deleted: a record removed', async () => {
    const { report } = await tamper((rs) => rs.filter((_, i) => i !== 5));
    expect(report.damage).toMatchObject({ kind: 'deleted', seq: 6 });
    expect(report.damage.message).toContain('seq 5 missing');
  });

  it('deleted: several records removed', async () => {
    const { report } = await tamper((rs) => rs.filter((_, i) => i < 3 || i > 6));
    expect(report.damage).toMatchObject({ kind: 'deleted', seq: 7 });
    expect(report.damage.message).toContain('seq 3..6 missing');
  });

  it('inserted: a forged record chained into place', async () => {
    const { report } = await tamper((rs) => {
      const forged = structuredClone(rs[4]);
      forged.event.id = '00000000-0000-4000-8000-000000000000';
      forged.user.id = 'mallory';
      forged.audit.seq = 5;
      forged.audit.prev_hash = rs[4].audit.hash;
      rehash(forged);
      return [...rs.slice(0, 5), forged, ...rs.slice(5)];
    });
    expect(report.damage).toMatchObject({ kind: 'inserted', seq: 5, line: 7 });
  });

  it('inserted: a foreign record dropped in', async () => {
    const { report } = await tamper((rs) => {
      const foreign = structuredClone(rs[3]);
      foreign.audit.seq = 99;
      rehash(foreign);
      return [...rs.slice(0, 6), foreign, ...rs.slice(6)];
    });
    expect(report.damage).toMatchObject({ kind: 'inserted', seq: 99 });
  });

  it('inserted: a duplicated record', async () => {
    const { report } = await tamper((rs) => [...rs.slice(0, 6), rs[2], ...rs.slice(6)]);
    expect(report.damage).toMatchObject({ kind: 'inserted', seq: 2 });
  });

  it('reordered: two records swapped', async () => {
    const { report } = await tamper((rs) => {
      [rs[5], rs[6]] = [rs[6], rs[5]];
      return rs;
    });
    expect(report.damage).toMatchObject({ kind: 'reordered', seq: 6 });
  });

  it('truncated: the tail cut off', async () => {
    const { report } = await tamper((rs) => rs.slice(0, 15));
    expect(report.damage).toMatchObject({ kind: 'truncated', seq: 14 });
  });

  it('truncated: the tail cut back to a periodic checkpoint', async () => {
    const { report } = await tamper((rs) => rs.slice(0, 11)); // seq 10 is a periodic checkpoint
    expect(report.damage.kind).toBe('truncated');
    expect(report.damage.message).toContain('periodic checkpoint');
  });

  it('truncated: the last line torn', async () => {
    const { privatePem } = keyPair();
    const path = writeLog({ signerPem: privatePem });
    const text = readFileSync(path, 'utf8');
    writeFileSync(path, text.slice(0, text.length - 40));
    const result = await cli('verify', '--json', path);
    expect(JSON.parse(result.out).damage).toMatchObject({ kind: 'truncated' });
  });

  it('bad_signature: a tail cut and re-closed with a forged checkpoint', async () => {
    const { report } = await tamper((rs) => {
      const kept = rs.slice(0, 16);
      const stop = structuredClone(rs.at(-2));
      stop.audit.seq = 16;
      stop.audit.prev_hash = kept[15].audit.hash;
      rehash(stop);
      const closing = structuredClone(rs.at(-1));
      closing.audit.seq = 17;
      closing.audit.prev_hash = stop.audit.hash;
      closing.audit.checkpoint.covers = { seq: 16, hash: stop.audit.hash };
      rehash(closing);
      return [...kept, stop, closing];
    });
    expect(report.damage).toMatchObject({ kind: 'bad_signature', seq: 17 });
  });

  /** A signed log cut after `keep` records, re-closed with a forged stop and an unsigned checkpoint. */
  const reclosedUnsigned = (keep: number) => (rs: any[]) => {
    const kept = rs.slice(0, keep);
    const stop = structuredClone(rs.at(-2));
    stop.audit.seq = keep;
    stop.audit.prev_hash = kept[keep - 1].audit.hash;
    rehash(stop);
    const closing = structuredClone(rs.at(-1));
    closing.audit.seq = keep + 1;
    closing.audit.prev_hash = stop.audit.hash;
    closing.audit.checkpoint = {
      covers: { seq: keep, hash: stop.audit.hash },
      algorithm: 'none',
      time: closing.audit.checkpoint.time,
      records: 2,
    };
    rehash(closing);
    return [...kept, stop, closing];
  };

  it('unsigned_checkpoint: a signed log cut and re-closed without the key (a downgrade)', async () => {
    // Cut right after the second signed checkpoint (seq 21), then a forged stop and closing.
    const { code, report } = await tamper(reclosedUnsigned(22));
    expect(code).toBe(1);
    expect(report.damage).toMatchObject({ kind: 'unsigned_checkpoint', seq: 23 });
    // Without keys the signatures cannot be checked, but the unsigned end is said plainly.
    const { privatePem } = keyPair();
    const path = writeLog({ calls: 25, signerPem: privatePem });
    writeJsonLines(path, reclosedUnsigned(22)(readJsonLines(path)));
    const unkeyed = await cli('verify', path);
    expect(unkeyed.code).toBe(0);
    expect(unkeyed.out).toContain(
      'warning: the last signed checkpoint covers seq 21; the 2 record(s) after it are covered by no signature',
    );
  });

  it('unsigned_checkpoint: a whole log rewritten with unsigned checkpoints', async () => {
    const forged = writeLog({ calls: 25 });
    const { code, report } = await tamper(() => readJsonLines(forged));
    expect(code).toBe(1);
    expect(report.damage).toMatchObject({ kind: 'unsigned_checkpoint', seq: 10 });
  });

  it('accepts an open tail only when asked (a log still being written)', async () => {
    const path = writeLog();
    writeJsonLines(path, readJsonLines(path).slice(0, 15));
    expect((await cli('verify', path)).code).toBe(1);
    const live = await cli('verify', '--allow-open-tail', path);
    expect(live.code).toBe(0);
    expect(live.out).toContain('open tail: 4 record(s) after the last checkpoint');
  });
});

describe('rotation and restart', () => {
  it('continues one chain across rotated files and restarts, in any file order', async () => {
    const dir = tempDir();
    const path = join(dir, 'audit.jsonl');
    const { privatePem } = keyPair();
    for (let run = 0; run < 3; run++) {
      const log = new AuditLog({
        sinks: [fileSink({ path, maxBytes: 6_000, daily: false })],
        service: SERVICE,
        checkpointEvery: 7,
        signer: loadSigner(privatePem),
        ...(findChainEnd(path) ? { resume: findChainEnd(path)! } : {}),
      });
      log.append(lifecycleEntry('gatehouse/start'));
      for (let i = 0; i < 20; i++) log.append(callEntry(run * 100 + i));
      log.append(lifecycleEntry('gatehouse/stop'));
      log.close();
    }
    const files = readdirSync(dir).map((f) => join(dir, f));
    expect(files.length).toBeGreaterThan(3);
    const result = await cli('verify', ...files.sort().reverse());
    expect(result.code).toBe(0);
    expect(result.out).toMatch(/intact: \d+ records in 1 chain\(s\)/);
    const all = files.flatMap(readJsonLines);
    const resumed = all.filter((r) => r.audit.resumed !== undefined);
    expect(resumed).toHaveLength(2);
    expect(resumed.every((r) => r.event.action === 'gatehouse/start')).toBe(true);
  });

  it('rotates when the UTC day changes', async () => {
    const dir = tempDir();
    const path = join(dir, 'audit.jsonl');
    let now = new Date('2026-11-29T23:59:58Z');
    const log = new AuditLog({
      sinks: [fileSink({ path, maxBytes: 1 << 30, daily: true, now: () => now })],
      service: SERVICE,
      now: () => now,
    });
    log.append(lifecycleEntry('gatehouse/start', now));
    log.append(callEntry(1, now));
    now = new Date('2026-11-30T00:00:01Z');
    log.append(callEntry(2, now));
    log.append(lifecycleEntry('gatehouse/stop', now));
    log.close();
    const files = readdirSync(dir).sort();
    expect(files).toEqual(['audit.jsonl', 'audit.jsonl.20261130T000001000Z']);
    expect(readJsonLines(join(dir, files[1]!)).map((r) => r.audit.seq)).toEqual([0, 1]);
    expect(readJsonLines(join(dir, files[0]!)).map((r) => r.audit.seq)).toEqual([2, 3, 4]);
    expect((await cli('verify', ...files.map((f) => join(dir, f)))).code).toBe(0);
  });

  it('resumes after a crash that tore the last line, and says so', () => {
    const path = writeLog();
    const text = readFileSync(path, 'utf8');
    writeFileSync(path, `${text}{"@timestamp":"2026-11-29T23:59:59.000Z","eve`);
    const end = findChainEnd(path)!;
    expect(end.damagedTail).toBe(true);
    expect(end.seq).toBe(30 - 1);
    expect(existsSync(path)).toBe(true);
  });
});

describe('deferred records', () => {
  const memoryLog = (checkpointEvery = 1000) => {
    const lines: Array<Record<string, any>> = [];
    const log = new AuditLog({
      sinks: [
        {
          name: 'memory',
          write: (line) => lines.push(JSON.parse(line) as Record<string, any>),
          close: () => undefined,
        },
      ],
      service: SERVICE,
      checkpointEvery,
    });
    return { log, lines, ids: () => lines.map((l) => l.mcp?.request_id ?? l.event.action) };
  };
  const nextTurn = () => new Promise((resolve) => setImmediate(resolve));

  it('are written at the end of the turn, in the order they were queued', async () => {
    const { log, ids } = memoryLog();
    log.defer(() => callEntry(1));
    log.defer(() => callEntry(2));
    expect(ids()).toEqual([]);
    expect(log.pending).toBe(2);
    await nextTurn();
    expect(ids()).toEqual([1, 2]);
    expect(log.pending).toBe(0);
  });

  it('go before anything written after them: a record, a checkpoint, the close', async () => {
    const { log, lines, ids } = memoryLog(3);
    log.defer(() => callEntry(1));
    log.append(callEntry(2));
    log.defer(() => callEntry(3));
    log.defer(() => callEntry(4)); // the third record: a checkpoint follows it
    log.defer(() => callEntry(5));
    log.close();
    expect(ids()).toEqual([1, 2, 3, 'audit/checkpoint', 4, 5, 'audit/checkpoint']);
    expect(lines.map((l) => l.audit.seq)).toEqual([0, 1, 2, 3, 4, 5, 6]);
    expect(() => log.defer(() => callEntry(6))).toThrow('the audit log is closed');
    await nextTurn();
    expect(lines).toHaveLength(7);
  });

  it('skip a record whose builder fails or gives nothing, and keep the rest', async () => {
    const { log, ids } = memoryLog();
    log.defer(() => callEntry(1));
    log.defer(() => {
      throw new Error('bug');
    });
    log.defer(() => undefined);
    log.defer(() => callEntry(4));
    await nextTurn();
    expect(ids()).toEqual([1, 4]);
  });
});
