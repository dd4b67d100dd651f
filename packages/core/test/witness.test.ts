// Checkpoints leave the host as they are made (GATEHOUSE_AUDIT_WITNESS_*, witness-delivery.ts): a real
// rsyslog over TCP and an OTLP/HTTP logs receiver take each one, and `gatehouse-audit verify
// --witness` holds the log to what they received. The attack the witness exists for is played
// out: the host's log rewritten (and cut short) and every checkpoint re-signed with the key the
// host holds — the log verifies on its own, and not against the witness.
import { spawnSync } from 'node:child_process';
import { generateKeyPairSync } from 'node:crypto';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Writable } from 'node:stream';
import {
  AuditLog,
  checkpointPayload,
  fileSink,
  findChainEnd,
  loadSigner,
  main as auditCli,
  recordHash,
  signCheckpoint,
} from '@gatehouse/audit';
import type { AuditRecord } from '@gatehouse/audit';
import {
  connectStdio,
  eventually,
  freePort,
  resultText,
  startOtlpReceiver,
  startRsyslog,
} from '@gatehouse/testkit';
import type { TestWitness } from '@gatehouse/testkit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

const demoServer = fileURLToPath(new URL('./fixtures/demo-server.ts', import.meta.url));
const dir = mkdtempSync(join(tmpdir(), 'witness-'));
const { privateKey, publicKey } = generateKeyPairSync('ed25519');
const PRIVATE = privateKey.export({ type: 'pkcs8', format: 'pem' }).toString();
const PUBLIC = join(dir, 'public.pem');
writeFileSync(PUBLIC, publicKey.export({ type: 'spki', format: 'pem' }).toString());
const LOG = join(dir, 'audit.jsonl');

let syslog: TestWitness;
let otlp: TestWitness;

/** Runs `gatehouse-audit` as a reviewer would; its exit code and what it printed. */
async function audit(args: string[]): Promise<{ code: number; out: string }> {
  let out = '';
  const sink = new Writable({
    write(chunk: Buffer, _e, done) {
      out += chunk.toString();
      done();
    },
  });
  const code = await auditCli(args, sink, sink);
  return { code, out };
}

const records = (file: string): AuditRecord[] =>
  readFileSync(file, 'utf8')
    .split('\n')
    .filter(Boolean)
    .map((l) => JSON.parse(l) as AuditRecord);

/**
 * What a host's owner can do with the key it holds: records changed or dropped, then the chain
 * recomputed and every checkpoint re-signed, so the log is self-consistent again.
 */
function reseal(list: AuditRecord[]): string {
  const signer = loadSigner(PRIVATE);
  let prev: AuditRecord | undefined;
  for (const [i, record] of list.entries()) {
    record.audit.seq = i;
    record.audit.prev_hash = prev?.audit.hash ?? null;
    const checkpoint = record.audit.checkpoint;
    if (checkpoint !== undefined && prev !== undefined) {
      checkpoint.covers = { seq: prev.audit.seq, hash: prev.audit.hash };
      checkpoint.signature = signCheckpoint(
        signer,
        checkpointPayload(record.audit.stream, prev.audit.seq, prev.audit.hash, checkpoint.time),
      );
    }
    record.audit.hash = recordHash(record);
    prev = record;
  }
  return `${list.map((r) => JSON.stringify(r)).join('\n')}\n`;
}

beforeAll(async () => {
  [syslog, otlp] = await Promise.all([startRsyslog(), startOtlpReceiver()]);
  // A server with both witnesses, a signed trail checkpointed every 3 records; a short session.
  const connection = await connectStdio(process.execPath, [demoServer], {
    env: {
      PATH: process.env.PATH ?? '',
      GATEHOUSE_AUDIT_SINKS: 'file',
      GATEHOUSE_AUDIT_FILE: LOG,
      GATEHOUSE_AUDIT_SIGNING_KEY: PRIVATE,
      GATEHOUSE_AUDIT_CHECKPOINT_EVERY: '3',
      GATEHOUSE_AUDIT_WITNESS_SYSLOG: syslog.url,
      GATEHOUSE_AUDIT_WITNESS_OTLP: otlp.url,
      GATEHOUSE_PRINCIPAL: 'alice',
    },
  });
  for (let i = 0; i < 8; i++) {
    const result = await connection.client.callTool({
      name: 'demo_echo',
      arguments: { text: `call ${i}` },
    });
    expect(resultText(result)).toContain(`call ${i}`);
  }
  await connection.close();
  // Every checkpoint of the log reaches both witnesses (the last one on the way out).
  const checkpoints = () =>
    records(LOG).filter((r) => r.event.action === 'audit/checkpoint').length;
  const received = (w: TestWitness) => (w.text().match(/audit\/checkpoint/g) ?? []).length;
  await eventually(() => received(syslog) >= checkpoints() && received(otlp) >= checkpoints());
}, 60_000);

afterAll(async () => {
  await syslog?.stop();
  await otlp?.stop();
});

describe('the witnesses', () => {
  it('receive every checkpoint: rsyslog as RFC 5424 messages, the collector as OTLP log records', () => {
    const log = records(LOG);
    const checkpoints = log.filter((r) => r.event.action === 'audit/checkpoint');
    expect(checkpoints.length).toBeGreaterThanOrEqual(4);
    const lines = syslog.text().split('\n').filter(Boolean);
    expect(lines).toHaveLength(checkpoints.length);
    for (const [i, line] of lines.entries()) {
      // <PRI>VERSION TIMESTAMP HOSTNAME APP-NAME PROCID MSGID SD MSG
      expect(line).toMatch(/^<110>1 \d{4}-\d\d-\d\dT[\d:.]+Z \S+ demo \d+ checkpoint - \{/);
      expect(JSON.parse(line.slice(line.indexOf('{')))).toEqual(checkpoints[i]);
    }
    const exported = otlp
      .text()
      .split('\n')
      .filter(Boolean)
      .flatMap(
        (l) =>
          (
            JSON.parse(l) as {
              resourceLogs: Array<{
                resource: { attributes: Array<{ key: string; value: { stringValue?: string } }> };
                scopeLogs: Array<{
                  logRecords: Array<{
                    body: { stringValue: string };
                    attributes: Array<{ key: string; value: Record<string, unknown> }>;
                  }>;
                }>;
              }>;
            }
          ).resourceLogs,
      );
    expect(exported[0]!.resource.attributes).toContainEqual({
      key: 'service.name',
      value: { stringValue: 'demo' },
    });
    const bodies = exported.flatMap((rl) =>
      rl.scopeLogs.flatMap((sl) => sl.logRecords.map((lr) => JSON.parse(lr.body.stringValue))),
    );
    expect(bodies).toEqual(checkpoints);
  });

  it('verify --witness: the log holds every position the witnesses saw, with the same hashes', async () => {
    for (const witness of [syslog.file, otlp.file]) {
      const { code, out } = await audit(['verify', '--key', PUBLIC, '--witness', witness, LOG]);
      expect(code, out).toBe(0);
      const n = records(LOG).filter((r) => r.event.action === 'audit/checkpoint').length;
      expect(out).toContain(
        `witness: ${n} of ${n} witnessed checkpoint(s) of these streams match the log`,
      );
    }
  });
});

describe('a log rewritten and re-signed on its host', () => {
  it('verifies on its own, and fails against the witness: rewritten, at the changed record', async () => {
    const forged = records(LOG);
    const target = forged.find((r) => r.event.action === 'tools/call' && r.audit.seq > 2)!;
    (target as { user?: { id: string } }).user = { id: 'mallory' };
    const file = join(dir, 'rewritten.jsonl');
    writeFileSync(file, reseal(forged));
    const alone = await audit(['verify', '--key', PUBLIC, file]);
    expect(alone.code, alone.out).toBe(0); // the key holder's rewrite is self-consistent
    for (const witness of [syslog.file, otlp.file]) {
      const caught = await audit(['verify', '--key', PUBLIC, '--witness', witness, file]);
      expect(caught.code, caught.out).toBe(1);
      // Found at the first position a witness vouches for after the change: the chain carries
      // every change forward; the range it names holds the changed record.
      const found =
        /^DAMAGED \(rewritten\) at \S+:\d+ seq (\d+): the witness received a checkpoint .* a record after seq (\d+) \(the last position the witness confirms\) up to this one was changed/m.exec(
          caught.out,
        );
      expect(found, caught.out).not.toBeNull();
      expect(Number(found![2])).toBeLessThan(target.audit.seq);
      expect(Number(found![1])).toBeGreaterThanOrEqual(target.audit.seq);
    }
  });

  it('the report held to the witness says so too: damaged, rewritten (another road to the same verdict)', async () => {
    const forged = records(LOG);
    forged.find((r) => r.event.action === 'tools/call' && r.audit.seq > 2)!.user = {
      id: 'mallory',
    };
    const file = join(dir, 'rewritten-report.jsonl');
    writeFileSync(file, reseal(forged));
    const html = join(dir, 'report.html');
    const alone = await audit(['report', '--out', html, '--key', PUBLIC, file]);
    expect(alone.code, alone.out).toBe(0);
    const held = await audit([
      'report',
      '--out',
      html,
      '--key',
      PUBLIC,
      '--witness',
      syslog.file,
      file,
    ]);
    expect(held.code, held.out).toBe(1);
    const page = readFileSync(html, 'utf8');
    expect(page).toContain('data-integrity="damaged"');
    expect(page).toContain('Integrity: DAMAGED — rewritten');
    expect(page).toMatch(/data-finding="damage"[^>]*>.*Integrity damage \(<b>rewritten<\/b>\)/);
  });

  it('cut short and closed again: verifies on its own, and the witness says records were removed', async () => {
    // Keep the first records, then close the chain properly with the host's key, as an
    // intruder who wants the last calls gone would.
    const kept = records(LOG).slice(0, 5);
    const file = join(dir, 'truncated.jsonl');
    writeFileSync(file, reseal(kept));
    const log = new AuditLog({
      sinks: [fileSink({ path: file, maxBytes: 1e9, daily: false })],
      service: { name: 'demo', version: '1.0.0' },
      signer: loadSigner(PRIVATE),
      resume: findChainEnd(file)!,
    });
    log.append({
      '@timestamp': new Date().toISOString(),
      event: {
        id: 'x',
        kind: 'event',
        action: 'gatehouse/stop',
        category: ['process'],
        type: ['end'],
        outcome: 'success',
        reason: 'stopped',
      },
    });
    log.close();
    const alone = await audit(['verify', '--key', PUBLIC, file]);
    expect(alone.code, alone.out).toBe(0);
    const caught = await audit(['verify', '--key', PUBLIC, '--witness', syslog.file, file]);
    expect(caught.code, caught.out).toBe(1);
    expect(caught.out).toMatch(/^DAMAGED \((rewritten|truncated)\)/m);
  });

  it('a witness entry that is not a genuine checkpoint is said, not trusted', async () => {
    const fake = join(dir, 'fake-witness.log');
    const checkpoint = records(LOG).find((r) => r.event.action === 'audit/checkpoint')!;
    const tampered = structuredClone(checkpoint);
    tampered.audit.checkpoint!.covers.hash = `sha256:${'0'.repeat(64)}`;
    writeFileSync(fake, `<110>1 - h demo 1 checkpoint - ${JSON.stringify(tampered)}\n`);
    const { code, out } = await audit(['verify', '--key', PUBLIC, '--witness', fake, LOG]);
    expect(code, out).toBe(0);
    expect(out).toContain('warning: 1 witness entry is not a genuine checkpoint');
    expect(out).toContain('witness: 0 of 0 witnessed checkpoint(s)');
  });
});

describe('the independent verifier (packages/audit/python/verify.py)', () => {
  const PY = fileURLToPath(new URL('../../audit/python/verify.py', import.meta.url));
  const python = (...args: string[]) => {
    const run = spawnSync('python3', [PY, ...args], { encoding: 'utf8' });
    return { code: run.status, verdict: JSON.parse(run.stdout || '{}') as Record<string, unknown> };
  };

  it('agrees with gatehouse-audit on the log a real server wrote, alone and against each witness', async () => {
    const ours = await audit(['verify', '--json', '--key', PUBLIC, LOG]);
    const records = (JSON.parse(ours.out) as { records: number }).records;
    expect(python('--key', PUBLIC, LOG)).toEqual({ code: 0, verdict: { intact: true, records } });
    for (const witness of [syslog.file, otlp.file])
      expect(python('--key', PUBLIC, '--witness', witness, LOG).verdict).toEqual({
        intact: true,
        records,
      });
  });

  it('agrees on the rewritten and re-signed copy: intact alone, rewritten at the same place against the witness', async () => {
    const forged = records(LOG);
    forged.find((r) => r.event.action === 'tools/call' && r.audit.seq > 2)!.user = {
      id: 'mallory',
    };
    const file = join(dir, 'rewritten-py.jsonl');
    writeFileSync(file, reseal(forged));
    expect(python('--key', PUBLIC, file).verdict.intact).toBe(true);
    const ours = JSON.parse(
      (await audit(['verify', '--json', '--key', PUBLIC, '--witness', syslog.file, file])).out,
    ) as { damage: { kind: string; line: number; seq: number } };
    const theirs = python('--key', PUBLIC, '--witness', syslog.file, file);
    expect(theirs.code).toBe(1);
    expect(theirs.verdict.damage).toMatchObject({
      kind: 'rewritten',
      line: ours.damage.line,
      seq: ours.damage.seq,
    });
  });
});

describe('a witness that is away', () => {
  /** The demo server over stdio, a checkpoint after every record, with `witness` configured. */
  const serverWith = (witness: Record<string, string>) =>
    connectStdio(process.execPath, [demoServer], {
      env: {
        PATH: process.env.PATH ?? '',
        GATEHOUSE_AUDIT_SINKS: 'file',
        GATEHOUSE_AUDIT_FILE: join(dir, `away-${Object.keys(witness).join('-')}.jsonl`),
        GATEHOUSE_AUDIT_CHECKPOINT_EVERY: '1',
        ...witness,
      },
    });

  it('never holds up a call: the server answers, and says in its log that checkpoints wait', async () => {
    const port = await freePort(); // nothing listens there
    const connection = await serverWith({
      GATEHOUSE_AUDIT_WITNESS_SYSLOG: `tcp://127.0.0.1:${port}`,
    });
    for (let i = 0; i < 3; i++) {
      const result = await connection.client.callTool({
        name: 'demo_echo',
        arguments: { text: `away ${i}` },
      });
      expect(result.isError).toBeFalsy();
    }
    await eventually(() =>
      connection.stderr.some((l) => l.includes('audit witness (syslog) unreachable')),
    );
    await connection.close();
    // Said once while away, not once per checkpoint.
    expect(
      connection.stderr.filter((l) => l.includes('checkpoints are queued until it is back')),
    ).toHaveLength(1);
  });

  it('an OTLP collector that is away is said in the log too (not only to OpenTelemetry diagnostics)', async () => {
    const port = await freePort();
    const connection = await serverWith({
      GATEHOUSE_AUDIT_WITNESS_OTLP: `http://127.0.0.1:${port}/v1/logs`,
    });
    const result = await connection.client.callTool({
      name: 'demo_echo',
      arguments: { text: 'away' },
    });
    expect(result.isError).toBeFalsy();
    await eventually(
      () =>
        connection.stderr.some((l) => l.includes('audit witness (OTLP) did not take checkpoints')),
      Boolean,
      20_000,
    );
    await connection.close();
  });
});
