import { execFile, execFileSync } from 'node:child_process';
import { createWriteStream, existsSync, readFileSync, readdirSync, statSync } from 'node:fs';
import { once } from 'node:events';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import { AuditLog, CSV_COLUMNS, csvCell } from '../src/index.js';
import type { LineSink } from '../src/index.js';
import { MIN_NODE, supportedNode } from '../src/node-check.js';
import { SERVICE, callEntry, cli, lifecycleEntry, tempDir, writeLog } from './helpers.js';

const bin = fileURLToPath(new URL('../dist/bin.js', import.meta.url));

describe('gatehouse-audit in a pipe', () => {
  it('stops quietly when the reader stops early (export … | head)', async () => {
    const path = writeLog({ calls: 3000 });
    const { spawn } = await import('node:child_process');
    const child = spawn(process.execPath, [bin, 'export', '--format', 'csv', path], {
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stderr = '';
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    // Read the first chunk only, then close the pipe, as `head` does.
    await once(child.stdout, 'data');
    child.stdout.destroy();
    const [code] = (await once(child, 'exit')) as [number | null];
    expect(stderr).not.toMatch(/EPIPE|Error/);
    expect(code).toBe(0);
  });
});

describe('gatehouse-audit query', () => {
  it('filters by principal, tool, outcome, target and time; prints a table or JSON', async () => {
    const path = writeLog({ calls: 48 });
    const all = await cli('query', '--format', 'json', path);
    expect(all.out.trim().split('\n')).toHaveLength(48);
    const alice = await cli('query', '--format', 'json', '--principal', 'alice', path);
    const rows = alice.out
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l));
    expect(rows).toHaveLength(16);
    expect(rows.every((r) => r.user.id === 'alice')).toBe(true);
    const denied = await cli(
      'query',
      '--format',
      'json',
      '--outcome',
      'denied',
      '--tool',
      'slack_post_message',
      path,
    );
    expect(
      denied.out
        .trim()
        .split('\n')
        .map((l) => JSON.parse(l).event.reason),
    ).toEqual(['denied', 'denied']);
    const target = await cli('query', '--format', 'json', '--target', 'github:acme/repo-1#*', path);
    expect(target.out.trim().split('\n')).toHaveLength(12);
    const window = await cli(
      'query',
      '--format',
      'json',
      '--from',
      '2026-11-29T08:10:00Z',
      '--to',
      '2026-11-29T08:20:00Z',
      path,
    );
    expect(window.out.trim().split('\n')).toHaveLength(10);
    const table = await cli('query', '--limit', '2', path);
    expect(table.out.trim().split('\n')).toHaveLength(2);
    expect(table.out).toMatch(
      /^2026-11-29T08:00:00.000Z {2}success ok\s+alice\s+tools\/call\s+github_get_issue → github:acme\/repo-0#0/,
    );
    const lifecycle = await cli(
      'query',
      '--format',
      'json',
      '--all',
      '--action',
      'gatehouse/start',
      path,
    );
    expect(lifecycle.out.trim().split('\n')).toHaveLength(1);
  });

  it('rejects bad usage with exit 2 and a hint', async () => {
    expect((await cli('query', '--format', 'xml', writeLog())).code).toBe(2);
    const badTime = await cli('query', '--from', 'yesterday-ish', writeLog());
    expect(badTime.code).toBe(2);
    expect(badTime.err).toContain('not a time');
    expect((await cli('frobnicate', 'x')).code).toBe(2);
    const missing = await cli('verify', join(tempDir(), 'nope.jsonl'));
    expect(missing.code).toBe(2);
    expect(missing.err).toContain('ENOENT');
  });
});

describe('gatehouse-audit export', () => {
  it('writes CSV with a header, quoting and formula neutralising', async () => {
    const path = writeLog({ calls: 5 });
    const { out } = await cli('export', '--format', 'csv', path);
    const lines = out.trim().split('\n');
    expect(lines[0]).toBe(CSV_COLUMNS.join(','));
    expect(lines).toHaveLength(6);
    expect(csvCell('=HYPERLINK("http://evil")')).toBe(`"'=HYPERLINK(""http://evil"")"`);
    expect(csvCell('a,b')).toBe('"a,b"');
  });

  it('maps calls to OCSF API Activity (6003) and leaves lifecycle records out', async () => {
    const path = writeLog({ calls: 6 });
    const { out } = await cli('export', '--format', 'ocsf', '--all', path);
    const events = out
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l));
    expect(events).toHaveLength(6);
    expect(events[0]).toMatchObject({
      class_uid: 6003,
      category_uid: 6,
      activity_id: 2,
      type_uid: 600302,
      status_id: 1,
      actor: { user: { uid: 'alice' } },
      api: { operation: 'tools/call', service: { name: 'demo' } },
      resources: [{ name: 'github_get_issue', type: 'mcp_tool', uid: 'github:acme/repo-0#0' }],
      metadata: { version: '1.6.0', product: { name: 'Gatehouse' } },
    });
    const write = events.find((e) => e.resources[0].name === 'slack_post_message');
    expect(write).toMatchObject({ activity_id: 99, type_uid: 600399 });
    expect(events.find((e) => e.status_detail === 'denied')).toMatchObject({
      status_id: 2,
      severity_id: 3,
    });
    expect(typeof events[0].time).toBe('number');
  });

  it('passes JSON lines through', async () => {
    const path = writeLog({ calls: 3 });
    const { out } = await cli('export', '--format', 'jsonl', path);
    expect(
      out
        .trim()
        .split('\n')
        .map((l) => JSON.parse(l).audit.seq),
    ).toEqual([1, 2, 3]);
  });
});

describe('the bin', () => {
  it('runs as a process and reads standard input', async () => {
    const path = writeLog({ calls: 4 });
    const child = execFile(process.execPath, [bin, 'verify', '-']);
    const { createReadStream } = await import('node:fs');
    createReadStream(path).pipe(child.stdin!);
    let out = '';
    child.stdout!.on('data', (c: Buffer) => (out += c.toString()));
    const [code] = (await once(child, 'exit')) as [number];
    expect(code).toBe(0);
    expect(out).toMatch(/^intact: 7 records/);
  });

  it('generates a signing key pair', async () => {
    const dir = tempDir();
    const result = await cli('keygen', '--out', dir);
    expect(result.out).toMatch(/^key id: ed25519:[0-9a-f]{16}$/m);
    expect(statSync(join(dir, 'audit-signing-key.pem')).mode & 0o777).toBe(0o600);
  });
});

describe('large logs', () => {
  it('verifies a log far larger than the memory it is given (streaming)', async () => {
    // ~60 MB of records; the verifier runs with a 40 MB heap, so it cannot hold the file. Few,
    // large records: writing and checking the chain costs per record, the memory per byte.
    const path = join(tempDir(), 'big.jsonl');
    const stream = createWriteStream(path);
    const sink: LineSink = {
      name: 'big',
      write: (line) => void stream.write(line),
      close: () => undefined,
    };
    const log = new AuditLog({ sinks: [sink], service: SERVICE, checkpointEvery: 1000 });
    log.append(lifecycleEntry('gatehouse/start'));
    const entry = callEntry(1);
    const padding = 'x'.repeat(2_000);
    for (let i = 0; i < 24_000; i++) {
      log.append({
        ...entry,
        event: { ...entry.event, id: `00000000-0000-4000-8000-${String(i).padStart(12, '0')}` },
        target: { resource: `${padding}${i}` },
      });
      if (stream.writableNeedDrain) await once(stream, 'drain');
    }
    log.append(lifecycleEntry('gatehouse/stop'));
    log.close();
    stream.end();
    await once(stream, 'finish');
    expect(statSync(path).size).toBeGreaterThan(55_000_000);
    const { stdout } = await promisify(execFile)(process.execPath, [
      '--max-old-space-size=40',
      bin,
      'verify',
      path,
    ]);
    expect(stdout).toMatch(/^intact: 24027 records/);
  }, 120_000);
});

describe('on a Node.js that is too old', () => {
  const run = promisify(execFile);
  const machineNode = '/usr/bin/node';
  const old = existsSync(machineNode)
    ? execFileSync(machineNode, ['-p', 'process.versions.node'], { encoding: 'utf8' }).trim()
    : undefined;

  it('says which Node.js it needs, on the machine’s own old Node', async () => {
    // The machine's Node is 20 (end of life); CI runs the suite on 24 beside it.
    expect(old, `${machineNode} should be the machine's Node 20`).toMatch(/^20\./);
    const result = await run(machineNode, [bin, 'verify', '-']).catch(
      (error: { code: number; stderr: string }) => error,
    );
    expect(result).toMatchObject({
      code: 1,
      stderr: `Gatehouse needs Node.js ${MIN_NODE} or later (Node 24 LTS is recommended); this is Node.js ${old}. Install a newer Node.js and run it again.\n`,
    });
  });

  it('checks the version it is told, on this Node too', async () => {
    const pretend = `data:text/javascript,Object.defineProperty(process.versions,'node',{value:'22.18.9'})`;
    const result = await run(process.execPath, ['--import', pretend, bin, 'verify', '-']).catch(
      (error: { code: number; stderr: string }) => error,
    );
    expect(result).toMatchObject({
      code: 1,
      stderr: expect.stringContaining('this is Node.js 22.18.9'),
    });
    expect(supportedNode('22.19.0')).toBe(true);
    expect(supportedNode('v24.0.0')).toBe(true);
    expect(supportedNode('22.18.99')).toBe(false);
    expect(supportedNode('18.20.4')).toBe(false);
  });

  it('asks for the Node.js every package declares', () => {
    const root = new URL('../../../', import.meta.url);
    const manifests = ['package.json', 'packages', 'servers'].flatMap((entry) =>
      entry === 'package.json'
        ? [entry]
        : readdirSync(new URL(entry, root)).map((d) => `${entry}/${d}/package.json`),
    );
    for (const manifest of manifests) {
      const { engines } = JSON.parse(readFileSync(new URL(manifest, root), 'utf8')) as {
        engines?: { node?: string };
      };
      expect(engines?.node, manifest).toBe(`>=${MIN_NODE.replace(/\.0$/, '')}`);
    }
  });
});
