import {
  closeSync,
  existsSync,
  fstatSync,
  mkdirSync,
  openSync,
  readSync,
  readdirSync,
  renameSync,
  writeSync,
} from 'node:fs';
import { basename, dirname, join } from 'node:path';
import { holdAuditLock } from './audit-lock.js';

/**
 * Where audit lines go. `write` is synchronous and throws when the line could not be written
 * (disk full, closed pipe): when it returns, the kernel has the line, so a crash or a signal
 * right after cannot lose it.
 */
export interface LineSink {
  readonly name: string;
  write(line: string): void;
  close(): void;
}

const pause = new Int32Array(new SharedArrayBuffer(4));

/**
 * Writes a whole buffer to a descriptor. Pipes to a slow reader are non-blocking and answer
 * EAGAIN when full: wait a millisecond and retry, for up to `patienceMs`, then fail.
 */
function writeAll(fd: number, buffer: Buffer, patienceMs = 5_000): void {
  let offset = 0;
  let deadline: number | undefined;
  while (offset < buffer.length) {
    try {
      offset += writeSync(fd, buffer, offset);
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EAGAIN') throw error;
      deadline ??= Date.now() + patienceMs;
      if (Date.now() > deadline) throw error;
      Atomics.wait(pause, 0, 0, 1);
    }
  }
}

/** A sink on an open descriptor: 1 (stdout) or 2 (stderr). */
export function fdSink(fd: number, name: string): LineSink {
  return {
    name,
    write: (line) => writeAll(fd, Buffer.from(line)),
    close: () => undefined,
  };
}

/** Options of {@link fileSink}. */
export interface FileSinkOptions {
  path: string;
  /** Rotate when the active file would grow past this size. */
  maxBytes: number;
  /** Rotate when the UTC day changes. */
  daily: boolean;
  now?: () => Date;
}

const NEWLINE = Buffer.from('\n');
const day = (d: Date): string => d.toISOString().slice(0, 10);
const stamp = (d: Date): string => d.toISOString().replace(/[-:.]/g, '');

/** The rotated files of an audit file, oldest first (their names sort by time). */
export function rotatedFiles(path: string): string[] {
  const dir = dirname(path);
  const prefix = `${basename(path)}.`;
  if (!existsSync(dir)) return [];
  return readdirSync(dir)
    .filter((f) => f.startsWith(prefix) && /^\d{8}T\d{9}Z(-\d+)?$/.test(f.slice(prefix.length)))
    .sort()
    .map((f) => join(dir, f));
}

/** Whether the file behind `fd` (of `size` bytes) holds at least one whole line. */
function holdsALine(fd: number, size: number): boolean {
  const chunk = Buffer.alloc(64 * 1024);
  for (let at = 0; at < size; at += chunk.length) {
    const n = readSync(fd, chunk, 0, chunk.length, at);
    if (chunk.subarray(0, n).includes(0x0a)) return true;
  }
  return false;
}

/** Whether the file behind `fd` (of `size` bytes) ends in the middle of a line. */
function endsMidLine(fd: number, size: number): boolean {
  if (size === 0) return false;
  const last = Buffer.alloc(1);
  readSync(fd, last, 0, 1, size - 1);
  return last[0] !== 0x0a;
}

/**
 * An append-only file with size and day rotation. Rotation renames the active file to
 * `<path>.<UTC timestamp>` and starts a new one; the chain simply continues in it.
 *
 * A line is never glued onto a torn one: a file that ends mid-line when it is opened (the last
 * writer was killed during a write), and the file after a write that failed part-way (a full
 * disk, a file-size limit), get a line break before the next line — the torn bytes stay a line
 * of their own, which the next record declares (`audit.resumed.damaged_tail`, writer.ts). The
 * file is held by one writer for as long as it is open (audit-lock.ts).
 */
export function fileSink(options: FileSinkOptions): LineSink & { readonly path: string } {
  const now = options.now ?? (() => new Date());
  mkdirSync(dirname(options.path), { recursive: true, mode: 0o750 });
  const lock = holdAuditLock(options.path);
  let fd: number;
  try {
    fd = openSync(options.path, 'a+', 0o640);
  } catch (error) {
    lock.release();
    throw error;
  }
  let size = fstatSync(fd).size;
  let openedDay = size > 0 ? day(fstatSync(fd).mtime) : day(now());
  // A file that ends mid-line (its last writer was killed during a write): the torn bytes become
  // a line of their own before anything else is written, and the next record declares them. A
  // file without one whole line (killed during its very first write) holds nothing a record
  // could resume from: it is kept beside the log (`<path>.torn-<time>`) and the log starts afresh.
  if (endsMidLine(fd, size)) {
    if (!holdsALine(fd, size)) {
      closeSync(fd);
      renameSync(options.path, `${options.path}.torn-${stamp(now())}`);
      fd = openSync(options.path, 'a+', 0o640);
      size = 0;
    } else {
      writeAll(fd, NEWLINE);
      size += 1;
    }
  }
  // Whether the file may end mid-line after a write that failed part-way.
  let torn = false;

  const rotate = (): void => {
    closeSync(fd);
    let target = `${options.path}.${stamp(now())}`;
    for (let n = 1; existsSync(target); n++) target = `${options.path}.${stamp(now())}-${n}`;
    renameSync(options.path, target);
    fd = openSync(options.path, 'a+', 0o640);
    size = 0;
    torn = false;
    openedDay = day(now());
  };

  return {
    name: `file:${options.path}`,
    path: options.path,
    write(line) {
      if (torn) {
        // What the failed write left is measured now: a line break only after torn bytes.
        size = fstatSync(fd).size;
        torn = endsMidLine(fd, size);
      }
      let bytes = Buffer.from(line);
      if (
        size > 0 &&
        (size + bytes.length > options.maxBytes || (options.daily && day(now()) !== openedDay))
      ) {
        rotate();
      }
      if (torn) bytes = Buffer.concat([NEWLINE, bytes]);
      try {
        writeAll(fd, bytes);
      } catch (error) {
        torn = true;
        throw error;
      }
      size += bytes.length;
    },
    close() {
      closeSync(fd);
      lock.release();
    },
  };
}

/**
 * The last line of a file that parses as JSON, looking at its final MiB (records are far
 * smaller). `damagedTail` says that something unparseable (a torn write) follows it.
 */
export function lastJsonLine(path: string): { value: unknown; damagedTail: boolean } | undefined {
  if (!existsSync(path)) return undefined;
  const fd = openSync(path, 'r');
  try {
    const size = fstatSync(fd).size;
    if (size === 0) return undefined;
    const length = Math.min(size, 1 << 20);
    const buffer = Buffer.alloc(length);
    readSync(fd, buffer, 0, length, size - length);
    const text = buffer.toString('utf8');
    let damagedTail = !text.endsWith('\n');
    const lines = text.split('\n');
    if (length < size) lines.shift(); // the first line of the window may be cut
    for (let i = lines.length - 1; i >= 0; i--) {
      const line = lines[i]!.trim();
      if (!line) continue;
      try {
        return { value: JSON.parse(line) as unknown, damagedTail };
      } catch {
        damagedTail = true;
      }
    }
    return { value: undefined, damagedTail: true };
  } finally {
    closeSync(fd);
  }
}
