import { randomUUID } from 'node:crypto';
import {
  closeSync,
  futimesSync,
  openSync,
  readFileSync,
  statSync,
  unlinkSync,
  writeSync,
} from 'node:fs';
import { hostname } from 'node:os';

/**
 * One writer per audit file (and one owner per grant file, `holdFileLock`). Two processes appending to the same file interleave their chains,
 * and the file then verifies as damaged; so a writer holds `<file>.lock` for as long as it has the
 * file open: created exclusively, holding who holds it, its time refreshed every few seconds.
 * A lock is taken over only when its holder is certainly gone: on this host (same hostname) a
 * process that no longer runs, or this very process id in an earlier life (a container restarted
 * with the same pid); on another host (a shared volume), a lock not refreshed for
 * {@link STALE_MS}. Otherwise the writer is refused, saying who holds the file.
 */

/** A lock not refreshed for this long belongs to a writer that is gone. */
export const STALE_MS = 15_000;
const REFRESH_MS = 5_000;

/** The second writer of an audit file, refused. */
export class AuditFileBusyError extends Error {
  override readonly name = 'AuditFileBusyError';
  readonly code = 'audit_file_busy';
}

interface Holder {
  readonly pid: number;
  readonly host: string;
  readonly instance: string;
}

const instance = randomUUID();

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/** Why the holder of an existing lock still holds it (undefined: it is gone). */
function heldBy(lock: string): string | undefined {
  let holder: Partial<Holder>;
  let age: number;
  try {
    holder = JSON.parse(readFileSync(lock, 'utf8')) as Partial<Holder>;
    age = Date.now() - statSync(lock).mtimeMs;
  } catch {
    return undefined; // gone meanwhile, or never written whole: a writer that died creating it
  }
  const who = `process ${holder.pid ?? '?'} on ${holder.host ?? '?'}`;
  if (holder.host === hostname()) {
    if (holder.pid === process.pid)
      return holder.instance === instance ? 'this process' : undefined;
    return typeof holder.pid === 'number' && alive(holder.pid) ? who : undefined;
  }
  return age < STALE_MS ? `${who} (refreshed ${Math.round(age / 1000)} s ago)` : undefined;
}

/** Takes the lock of an audit file (throws {@link AuditFileBusyError}); `release` gives it up. */
export function holdAuditLock(path: string): { release(): void } {
  return holdFileLock(
    path,
    (holder, lock) =>
      new AuditFileBusyError(
        `${path} is being written by ${holder} (its lock ${lock} is held): two writers would interleave their records and the log would verify as damaged. Give each server its own GATEHOUSE_AUDIT_FILE.`,
      ),
  );
}

/**
 * Takes `<path>.lock` by the rules above for any file one process must own (an audit file, a
 * grant file); `busy` is the error to throw, given who holds it and the lock's path.
 */
export function holdFileLock(
  path: string,
  busy: (holder: string, lock: string) => Error,
): { release(): void } {
  const lock = `${path}.lock`;
  let fd: number | undefined;
  for (let attempt = 0; fd === undefined; attempt++) {
    try {
      fd = openSync(lock, 'wx', 0o640);
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST' || attempt === 3) throw error;
      const holder = heldBy(lock);
      if (holder !== undefined) throw busy(holder, lock);
      try {
        unlinkSync(lock); // its holder is gone
      } catch {
        // another writer took it over first: the next attempt finds its lock
      }
    }
  }
  const held = fd;
  const own: Holder = { pid: process.pid, host: hostname(), instance };
  writeSync(held, JSON.stringify(own));
  const refresh = setInterval(() => {
    try {
      const now = new Date();
      futimesSync(held, now, now);
    } catch {
      // the next start decides with what it finds
    }
  }, REFRESH_MS);
  refresh.unref();
  let released = false;
  return {
    release() {
      if (released) return;
      released = true;
      clearInterval(refresh);
      closeSync(held);
      try {
        const current = JSON.parse(readFileSync(lock, 'utf8')) as Partial<Holder>;
        if (current.instance === instance && current.pid === process.pid) unlinkSync(lock);
      } catch {
        // already gone
      }
    },
  };
}
