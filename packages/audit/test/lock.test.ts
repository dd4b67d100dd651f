// One writer per audit file: a second process pointed at the same file interleaved its records
// with the first's, and the log verified as tampered. Cases tested: a second writer while the
// first runs (refused, saying who holds the file), after it stopped (allowed), after it was
// killed (its lock taken over: it no longer runs), a lock of another host that is refreshed
// (refused) or stale (taken over), and the first writer's records intact at the end.
import { spawn } from 'node:child_process';
import { existsSync, readFileSync, utimesSync, writeFileSync } from 'node:fs';
import { hostname } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { AuditFileBusyError, STALE_MS } from '../src/audit-lock.js';
import { fileSink } from '../src/index.js';
import { python, reference, tempDir } from './helpers.js';

const WRITER = fileURLToPath(new URL('./fixtures/writer.mjs', import.meta.url));
const open = (path: string) => fileSink({ path, maxBytes: 1e12, daily: false });

describe('a second writer of the same audit file', () => {
  it('is refused while the first runs, and may write once it has stopped or died', async () => {
    const dir = tempDir();
    const path = join(dir, 'audit.jsonl');
    const first = spawn(process.execPath, [WRITER, path, 'loop'], { stdio: 'ignore' });
    try {
      await expect.poll(() => existsSync(`${path}.lock`)).toBe(true);
      // A whole record written before the kill (under load the kill could come first).
      await expect
        .poll(() => existsSync(path) && readFileSync(path, 'utf8').includes('\n'))
        .toBe(true);
      expect(() => open(path)).toThrow(AuditFileBusyError);
      expect(() => open(path)).toThrow(
        new RegExp(
          `${path.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&')} is being written by process ${first.pid} on ${hostname()}.*Give each server its own GATEHOUSE_AUDIT_FILE`,
        ),
      );
    } finally {
      first.kill('SIGKILL');
      await new Promise((resolve) => first.once('exit', resolve));
    }
    // Killed: its lock stays, but it no longer runs: taken over.
    const second = open(path);
    second.close();
    expect(existsSync(`${path}.lock`)).toBe(false);
    // What the first one wrote is one chain, whole up to where it was killed.
    const node = await reference([path], undefined, undefined);
    expect(python([path])).toEqual([node]);
    expect(readFileSync(path, 'utf8').length).toBeGreaterThan(0);
  });

  it('on another host: refused while its lock is refreshed, taken over once it is stale', () => {
    const dir = tempDir();
    const path = join(dir, 'shared.jsonl');
    const lock = `${path}.lock`;
    writeFileSync(lock, JSON.stringify({ pid: 1, host: 'replica-7', instance: 'x' }));
    expect(() => open(path)).toThrow(/process 1 on replica-7 \(refreshed \d+ s ago\)/);
    const old = new Date(Date.now() - STALE_MS - 1_000);
    utimesSync(lock, old, old);
    const sink = open(path);
    expect(JSON.parse(readFileSync(lock, 'utf8'))).toMatchObject({
      pid: process.pid,
      host: hostname(),
    });
    sink.close();
  });

  it('in this very process, while it is open', () => {
    const path = join(tempDir(), 'twice.jsonl');
    const sink = open(path);
    try {
      expect(() => open(path)).toThrow(/being written by this process/);
    } finally {
      sink.close();
    }
    open(path).close();
  });
});
