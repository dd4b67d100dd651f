// A torn line must never swallow the next record. Roads to a torn line found and tested: a
// process killed in the middle of a write (at any byte: cut copies of a real log, and real
// SIGKILLs of a writing process), a short write on a full disk (ENOSPC, a size-limited tmpfs in a
// mount namespace of its own), a short write past a file-size limit (EFBIG, `prlimit --fsize`),
// and a kill during the very first write of a file. The writer starts a fresh line before the
// next record, that record declares the damage (`audit.resumed.damaged_tail`), both verifiers
// read the chain on past it and name it, and nothing before or after the torn line is lost.
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { AuditLog, fileSink, findChainEnd } from '../src/index.js';
import {
  SERVICE,
  callEntry,
  lifecycleEntry,
  python,
  reference,
  seeded,
  tempDir,
} from './helpers.js';
import type { Verdict } from './helpers.js';

const LONG = process.env.GATEHOUSE_TEST_LONG === '1';
const WRITER = fileURLToPath(new URL('./fixtures/writer.mjs', import.meta.url));
/** The long mode (npm run test:long) cuts 400 places and kills 20 times: minutes, not seconds. */
const TIMEOUT = LONG ? 900_000 : 60_000;

/** Appends `n` records and a stop with a writer that resumes the file, as a restarted server does. */
function writeOn(path: string, n: number, from: number): void {
  const resume = findChainEnd(path);
  const log = new AuditLog({
    sinks: [fileSink({ path, maxBytes: 1e12, daily: false })],
    service: SERVICE,
    checkpointEvery: 5,
    ...(resume === undefined ? {} : { resume }),
  });
  for (let i = 0; i < n; i++) log.append(callEntry(from + i));
  log.append(lifecycleEntry('gatehouse/stop'));
  log.close();
}

/** Both verifiers' verdicts, which must agree. */
async function verdicts(path: string): Promise<Verdict> {
  const node = await reference([path]);
  expect(python([path]), `the Python verifier on ${path}`).toEqual([node]);
  return node;
}

const parses = (text: string): boolean => {
  try {
    JSON.parse(text);
    return true;
  } catch {
    return false;
  }
};

/** Every line of `text` that ends with a line break, as written. */
const wholeLines = (text: string) => text.split('\n').slice(0, -1);

describe('a writer killed in the middle of a line', () => {
  const dir = tempDir();
  const original = join(dir, 'original.jsonl');
  // A log as a server leaves it running (no stop: it is killed), checkpoints every 5 records.
  const log = new AuditLog({
    sinks: [fileSink({ path: original, maxBytes: 1e12, daily: false })],
    service: SERVICE,
    checkpointEvery: 5,
  });
  log.append(lifecycleEntry('gatehouse/start'));
  for (let i = 0; i < 30; i++) log.append(callEntry(i));
  log.flush();
  const bytes = readFileSync(original);
  const breaks = [...bytes.keys()].filter((i) => bytes[i] === 0x0a);

  const random = seeded(Number(process.env.GATEHOUSE_TEST_SEED ?? 3412));
  const offsets = [
    5, // inside the very first record
    breaks[0]!, // the first record whole but for its line break
    breaks[0]! + 1, // exactly after a whole line: nothing torn
    breaks[3]! + 2,
    bytes.length - 1,
    ...Array.from({ length: LONG ? 400 : 24 }, () => 1 + Math.floor(random() * (bytes.length - 1))),
  ];

  it(
    `at any byte (${offsets.length} cuts): nothing is lost, and both verifiers say what happened`,
    async () => {
      for (const [n, at] of offsets.entries()) {
        const path = join(dir, `cut-${n}.jsonl`);
        writeFileSync(path, bytes.subarray(0, at));
        writeOn(path, 4, 1000);
        const text = readFileSync(path, 'utf8');
        // Torn: the cut left part of a line (a record whole but for its line break is not torn).
        const tail = bytes.subarray(bytes.lastIndexOf(0x0a, at - 1) + 1, at).toString('utf8');
        const torn = tail !== '' && !parses(tail);
        const firstLine = at <= breaks[0]!;
        if (firstLine) {
          // Killed during its first write: the fragment is kept beside the log, which starts anew.
          const kept = readdirSync(dir).filter((f) => f.startsWith(`cut-${n}.jsonl.torn-`));
          expect(kept, `cut at ${at}`).toHaveLength(1);
          expect(readFileSync(join(dir, kept[0]!))).toEqual(bytes.subarray(0, at));
        } else {
          // Every whole line before the cut is there, byte for byte, and the torn bytes stand alone.
          const before = bytes.subarray(0, at).toString('utf8');
          expect(text.startsWith(before), `cut at ${at}`).toBe(true);
          expect(
            text.slice(before.length).startsWith(tail === '' ? '{' : '\n{'),
            `cut at ${at}`,
          ).toBe(true);
        }
        // Every record written after the restart is a whole line of its own.
        const after = firstLine ? text : text.slice(bytes.subarray(0, at).toString('utf8').length);
        const actions = wholeLines(after)
          .filter((l) => l.startsWith('{'))
          .map((l) => (JSON.parse(l) as { event: { action: string } }).event.action);
        expect(
          actions.filter((a) => a === 'tools/call'),
          `cut at ${at}`,
        ).toHaveLength(4);
        expect(actions.slice(-2), `cut at ${at}`).toEqual(['gatehouse/stop', 'audit/checkpoint']);
        const verdict = await verdicts(path);
        expect(verdict, `cut at ${at}`).toMatchObject({ intact: true });
        expect(verdict.declared?.torn ?? 0, `cut at ${at}`).toBe(torn && !firstLine ? 1 : 0);
      }
    },
    TIMEOUT,
  );

  it(
    'by a real SIGKILL while it writes, again and again',
    async () => {
      const path = join(dir, 'killed.jsonl');
      for (let round = 0; round < (LONG ? 20 : 4); round++) {
        const child = spawn(process.execPath, [WRITER, path, 'loop'], { stdio: 'ignore' });
        await new Promise((resolve) => setTimeout(resolve, 150 + Math.floor(random() * 250)));
        child.kill('SIGKILL');
        await new Promise((resolve) => child.once('exit', resolve));
      }
      writeOn(path, 3, 2000);
      const verdict = await verdicts(path);
      expect(verdict).toMatchObject({ intact: true });
      // Every line of the file is a whole record (no record glued onto a torn one).
      const lines = wholeLines(readFileSync(path, 'utf8'));
      const glued = lines.filter((l) => (l.match(/"@timestamp"/g) ?? []).length > 1);
      expect(glued).toEqual([]);
    },
    TIMEOUT,
  );
});

describe('a write that fails part-way, and the writer goes on', () => {
  it('on a full disk (ENOSPC): the next record starts a fresh line and declares what was lost', async () => {
    const dir = tempDir();
    const mount = join(dir, 'small');
    mkdirSync(mount);
    const out = join(dir, 'copy.jsonl');
    // A 256 KiB tmpfs in a mount namespace of its own (no privilege needed), nearly filled by a
    // file the writer removes after its first failed write (then there is room for the rest).
    const script = [
      `mount -t tmpfs -o size=256k tmpfs '${mount}'`,
      `head -c 225000 /dev/zero > '${mount}/filler'`,
      `FREE='${mount}/filler' '${process.execPath}' '${WRITER}' '${mount}/audit.jsonl' fill 120`,
      `cp '${mount}/audit.jsonl' '${out}'`,
    ].join(' && ');
    const run = spawnSync('unshare', ['--user', '--map-root-user', '--mount', 'sh', '-c', script], {
      encoding: 'utf8',
    });
    expect(run.status, run.stderr).toBe(0);
    const { written, failed } = JSON.parse(run.stdout) as { written: number; failed: number };
    expect(failed).toBe(1);
    expect(written).toBe(119);
    const verdict = await verdicts(out);
    expect(verdict).toMatchObject({ intact: true, declared: { torn: 1, lost: 1 } });
    // Not one line holds two records.
    const lines = wholeLines(readFileSync(out, 'utf8'));
    expect(lines.filter((l) => (l.match(/"@timestamp"/g) ?? []).length > 1)).toEqual([]);
  });

  it('past a file-size limit (EFBIG): the restarted writer starts a fresh line and declares it', async () => {
    const dir = tempDir();
    const path = join(dir, 'limited.jsonl');
    const run = spawnSync(
      'prlimit',
      ['--fsize=20000', process.execPath, WRITER, path, 'fill', '200'],
      { encoding: 'utf8' },
    );
    expect(run.status, run.stderr).toBe(0);
    const { failed } = JSON.parse(run.stdout) as { failed: number };
    expect(failed).toBeGreaterThan(0);
    expect(readFileSync(path).length).toBe(20000);
    // The limit lifted (another process), the writer goes on where the whole records end.
    writeOn(path, 3, 3000);
    const verdict = await verdicts(path);
    expect(verdict).toMatchObject({ intact: true, declared: { torn: 1 } });
    expect(existsSync(`${path}.lock`)).toBe(false);
  });
});
