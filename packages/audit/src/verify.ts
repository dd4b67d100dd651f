import { createPublicKey } from 'node:crypto';
import type { KeyObject } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { checkpointPayload, keyIdOf, recordHash, verifyCheckpoint } from './chain.js';
import type { Line } from './read.js';
import type { AuditRecord } from './record.js';
import { WitnessCheck } from './witness-check.js';
import type { WitnessCopy, WitnessReport } from './witness-check.js';

/** The kinds of damage `verify` tells apart. */
export type DamageKind =
  | 'modified'
  | 'deleted'
  | 'inserted'
  | 'reordered'
  | 'truncated'
  | 'rewritten'
  | 'bad_signature'
  | 'untrusted_key'
  | 'unsigned_checkpoint';

/** The first problem found, named by file, line and seq. */
export interface Damage {
  kind: DamageKind;
  file: string;
  line: number;
  seq?: number;
  message: string;
}

/** What `verify` found. */
export interface VerifyReport {
  intact: boolean;
  records: number;
  /** Separate chains (a chain restarts when a stream without a file to resume from starts). */
  chains: number;
  checkpoints: {
    total: number;
    signed: number;
    verified: number;
    /** The trusted keys (key ids, as `gatehouse-audit keygen` prints them) that verified signatures, with how many each. */
    verifiedBy: Record<string, number>;
  };
  /** Records after the last checkpoint (accepted only with `allowOpenTail`). */
  openTail: number;
  /**
   * The last record a verified (or, without keys, present) signature covers, and how many
   * records come after it: what no signature vouches for. Absent when nothing is signed.
   */
  lastSigned?: { seq: number; unsignedAfter: number };
  /** Lines that are not audit records (log lines on a shared stream). */
  foreignLines: number;
  /**
   * Damage the writer itself declared (§5 of docs/audit-format.md: a record whose
   * `audit.resumed.damaged_tail` names the last whole record before it): lines torn by a write
   * that failed or a process killed mid-write, and records never written whole. The chain is
   * intact around them; what they held is lost.
   */
  declared: { tornLines: number; lostRecords: number };
  /** The seq the first chain starts at when the input begins mid-chain (older files not given). */
  startsAtSeq?: number;
  first: { time: string; seq: number } | undefined;
  last: { time: string; seq: number } | undefined;
  /** What the witness's copy of the checkpoints showed (with `witness`). */
  witness?: WitnessReport;
  damage?: Damage;
}

/** Options of {@link verifyLines}. */
export interface VerifyOptions {
  /** Trusted public keys by key id; signatures are checked when given. */
  keys?: ReadonlyMap<string, KeyObject>;
  /** Accept records after the last checkpoint (a log that is still being written). */
  allowOpenTail?: boolean;
  /** Called with every record in order (report and query reuse the single pass). */
  onRecord?: (record: AuditRecord) => void;
  /**
   * Keep reading after the first damage: `onDamage` is called where it is, and every later
   * record still goes to `onRecord` (a report shows the whole log, the damage marked in place).
   */
  continueAfterDamage?: boolean;
  onDamage?: (damage: Damage) => void;
  /**
   * A witness's copy of the checkpoints (`readWitness`): every position it names must be in the
   * log with the same hash — a log rewritten and re-signed on its host is found here.
   */
  witness?: WitnessCopy;
}

/** Loads trusted public keys (PEM files) keyed by their key id. */
export function loadPublicKeys(paths: readonly string[]): Map<string, KeyObject> {
  return new Map(
    paths.map((path) => {
      const key = createPublicKey(readFileSync(path, 'utf8'));
      return [keyIdOf(key), key] as const;
    }),
  );
}

const LOOKAHEAD = 64;

/** The damage of a line that is not a record at all (not JSON, or not a well-formed record). */
function lineDamage(current: Line): Damage | undefined {
  if (current.unparseable) {
    const torn = current.unparseable === 'torn';
    return {
      kind: torn ? 'truncated' : 'modified',
      file: current.file,
      line: current.line,
      message: torn
        ? 'the last line is cut short (torn write or truncated file)'
        : 'the line is not a JSON record any more',
    };
  }
  if (current.malformed !== undefined) {
    return {
      kind: 'modified',
      file: current.file,
      line: current.line,
      message: `the line is not a well-formed audit record any more (${current.malformed})`,
    };
  }
  return undefined;
}

/** Whether `line` is not JSON and the next record after it declares it torn (§5). */
function declaredTorn(
  line: Line,
  prev: { record: AuditRecord } | undefined,
  window: readonly Line[],
): boolean {
  if (line.unparseable !== 'garbage' || prev === undefined) return false;
  const next = window.find((l) => l.record !== undefined || l.malformed !== undefined);
  return next?.record !== undefined && declares(next.record, prev);
}

/**
 * Whether a record declares damage right after `prev`: its `audit.resumed` has `damaged_tail`
 * and names `prev` (the last record its writer wrote whole) as where it resumes.
 */
function declares(record: AuditRecord, prev: { record: AuditRecord }): boolean {
  const resumed = record.audit.resumed;
  return (
    resumed?.damaged_tail === true &&
    resumed.seq === prev.record.audit.seq &&
    resumed.hash === prev.record.audit.hash
  );
}

/** The records a chain may end with (then its closing checkpoint): a stop, or a refused start. */
const TERMINAL = new Set(['gatehouse/stop', 'gatehouse/start_refused', 'gatehouse/config_refused']);

type Located = Line & { record: AuditRecord };

/**
 * Verifies hash chains and checkpoints in one streaming pass and names the first damage:
 * - modified: a record's content no longer matches its hash, or a rewritten record (hash
 *   recomputed) no longer matches its successor's `prev_hash`;
 * - deleted: records are missing (the chain jumps forward);
 * - inserted: a record that belongs to no chain position sits between two genuine ones;
 * - reordered: genuine records are out of order;
 * - truncated: a chain does not end with a stop record and its closing checkpoint (its tail
 *   was cut — or the writer still runs or crashed), or the last line is torn;
 * - bad_signature / untrusted_key: a checkpoint signature fails, or its key is not trusted;
 * - unsigned_checkpoint: trusted keys were given and a checkpoint carries no signature.
 */
export async function verifyLines(
  lines: AsyncIterable<Line>,
  options: VerifyOptions = {},
): Promise<VerifyReport> {
  const report: VerifyReport = {
    intact: true,
    records: 0,
    chains: 0,
    checkpoints: { total: 0, signed: 0, verified: 0, verifiedBy: {} },
    openTail: 0,
    foreignLines: 0,
    declared: { tornLines: 0, lostRecords: 0 },
    first: undefined,
    last: undefined,
  };
  const fail = (damage: Damage): VerifyReport => {
    report.intact = false;
    report.damage = damage;
    options.onDamage?.(damage);
    return report;
  };
  const iterator = lines[Symbol.asyncIterator]();
  const window: Line[] = [];
  let exhausted = false;
  const fill = async (): Promise<void> => {
    while (!exhausted && window.length < LOOKAHEAD) {
      const next = await iterator.next();
      if (next.done) exhausted = true;
      else window.push(next.value);
    }
  };
  const seen = new Set<string>();
  let prev: Located | undefined;
  let sinceCheckpoint = 0;
  // A chain is closed when it ends with a stop record and the closing checkpoint after it.
  let closed = false;
  const notClosed = (at: Located): Damage => ({
    kind: 'truncated',
    file: at.file,
    line: at.line,
    seq: at.record.audit.seq,
    message:
      sinceCheckpoint > 0
        ? `the chain ends here with ${sinceCheckpoint} record(s) after its last checkpoint and no stop record: its end may have been cut (or the writer is still running or crashed: --allow-open-tail accepts that)`
        : 'the chain ends at a periodic checkpoint, not at a stop record and its closing checkpoint: its end may have been cut (or the writer is still running or crashed: --allow-open-tail accepts that)',
  });

  /** What is wrong with one line in its place in the chain; undefined when it is sound. */
  const damageAt = (current: Line): Damage | undefined => {
    const unread = lineDamage(current);
    if (unread !== undefined) return unread;
    const item = current as Located;
    const { record } = item;
    const { seq } = record.audit;
    const where = { file: item.file, line: item.line, seq };
    if (recordHash(record) !== record.audit.hash) {
      return {
        kind: 'modified',
        ...where,
        message: 'the record does not match its hash (its content was changed)',
      };
    }
    if (prev === undefined || (record.audit.prev_hash === null && seq === 0)) {
      // The start of a chain: a genesis record, or input that begins mid-chain.
      if (prev !== undefined && !closed && !options.allowOpenTail) return notClosed(prev);
      if (prev === undefined && record.audit.prev_hash !== null) report.startsAtSeq = seq;
      report.chains++;
    } else if (
      record.audit.prev_hash !== prev.record.audit.hash ||
      seq !== prev.record.audit.seq + 1
    ) {
      // The writer declared the records between as lost (a sink failed): accepted, and counted.
      if (declares(record, prev) && seq > prev.record.audit.seq) {
        report.declared.lostRecords += seq - prev.record.audit.seq - 1;
      } else return classifyBreak(item, prev, window, seen);
    }
    if (record.event.action === 'audit/checkpoint') {
      const problem = checkCheckpoint(record, prev, options.keys, report);
      if (problem) return { ...problem, ...where };
    }
    return undefined;
  };

  let signedSeq: number | undefined;
  let recordsAfterSigned = 0;
  const witness = options.witness === undefined ? undefined : new WitnessCheck(options.witness);

  for (;;) {
    await fill();
    const current = window.shift();
    if (current === undefined) break;
    if (!report.intact) {
      // Past the damage nothing is verified any more; the records still reach the report.
      if (current.record !== undefined) options.onRecord?.(current.record);
      continue;
    }
    if (current.foreign) {
      report.foreignLines++;
      continue;
    }
    // A line torn by a failed write, declared by the next record of the chain: counted, not damage.
    if (declaredTorn(current, prev, window)) {
      report.declared.tornLines++;
      continue;
    }
    const damage = damageAt(current);
    if (damage !== undefined) {
      fail(damage);
      if (!options.continueAfterDamage) return report;
      if (current.record !== undefined) options.onRecord?.(current.record);
      continue;
    }
    const item = current as Located;
    const { record } = item;
    const { seq } = record.audit;
    const checkpoint = record.event.action === 'audit/checkpoint';
    closed = checkpoint && TERMINAL.has(prev?.record.event.action ?? '');
    sinceCheckpoint = checkpoint ? 0 : sinceCheckpoint + 1;
    // (With trusted keys, a signed checkpoint that got here was verified.)
    if (checkpoint && record.audit.checkpoint?.algorithm === 'ed25519') {
      signedSeq = seq;
      recordsAfterSigned = 0;
    } else if (signedSeq !== undefined) recordsAfterSigned++;
    seen.add(record.audit.hash);
    report.records++;
    report.first ??= { time: record['@timestamp'], seq };
    report.last = { time: record['@timestamp'], seq };
    witness?.see(record, item.file, item.line);
    options.onRecord?.(record);
    prev = item;
  }

  if (signedSeq !== undefined) {
    report.lastSigned = { seq: signedSeq, unsignedAfter: recordsAfterSigned };
  }
  const witnessDamage = settleWitness(witness, report); // after the chain's own damage
  if (!report.intact) return report;
  if (witnessDamage !== undefined) return fail(witnessDamage);
  report.openTail = sinceCheckpoint;
  if (prev !== undefined && !closed && !options.allowOpenTail) return fail(notClosed(prev));
  return report;
}

/** The witness's part of the report, and its damage: a sound chain held to what left the host. */
function settleWitness(check: WitnessCheck | undefined, report: VerifyReport): Damage | undefined {
  if (check === undefined) return undefined;
  const { report: witnessed, damage } = check.finish();
  report.witness = witnessed;
  return damage;
}

/** Names the damage at a broken link by looking at the records that follow. */
function classifyBreak(
  item: Located,
  prev: Located,
  window: readonly Line[],
  seen: ReadonlySet<string>,
): Damage {
  const { record } = item;
  const seq = record.audit.seq;
  const expected = prev.record.audit.seq + 1;
  const where = { file: item.file, line: item.line, seq };
  const ahead = window.filter((l): l is Located => l.record !== undefined).map((l) => l.record);
  if (seen.has(record.audit.hash)) {
    return {
      kind: 'inserted',
      ...where,
      message: 'this record appears twice (a copy was inserted)',
    };
  }
  if (seq === prev.record.audit.seq) {
    return {
      kind: 'inserted',
      ...where,
      message: `the record before it (${prev.file}:${prev.line}) claims the same seq ${seq}: it was inserted`,
    };
  }
  const successorAhead = ahead.some((r) => r.audit.prev_hash === prev.record.audit.hash);
  const someoneFollowsThis = ahead.some((r) => r.audit.prev_hash === record.audit.hash);
  if (successorAhead) {
    return someoneFollowsThis
      ? {
          kind: 'reordered',
          ...where,
          message: `seq ${seq} comes before seq ${expected}: records are out of order`,
        }
      : {
          kind: 'inserted',
          ...where,
          message: `this record does not belong to the chain (seq ${expected} follows later)`,
        };
  }
  if (seq > expected) {
    return {
      kind: 'deleted',
      ...where,
      message: `seq ${expected}${seq - 1 > expected ? `..${seq - 1}` : ''} missing before this record (${seq - expected} deleted)`,
    };
  }
  if (seq === expected) {
    return {
      kind: 'modified',
      ...where,
      message: `the record before it (${prev.file}:${prev.line}) was rewritten: this record chains to a different hash`,
    };
  }
  return {
    kind: 'reordered',
    ...where,
    message: `seq ${seq} after seq ${prev.record.audit.seq}: records are out of order`,
  };
}

function checkCheckpoint(
  record: AuditRecord,
  prev: Located | undefined,
  keys: ReadonlyMap<string, KeyObject> | undefined,
  report: VerifyReport,
): { kind: DamageKind; message: string } | undefined {
  const checkpoint = record.audit.checkpoint;
  report.checkpoints.total++;
  if (checkpoint === undefined)
    return { kind: 'modified', message: 'a checkpoint record without its checkpoint' };
  if (
    prev !== undefined &&
    (checkpoint.covers.seq !== prev.record.audit.seq ||
      checkpoint.covers.hash !== prev.record.audit.hash)
  ) {
    return { kind: 'modified', message: 'the checkpoint does not cover the record before it' };
  }
  if (checkpoint.algorithm !== 'ed25519') {
    // With trusted keys, every checkpoint must carry one of their signatures: an unsigned one
    // is a downgrade (a cut log re-closed without the key), not an older kind of log.
    if (keys === undefined || keys.size === 0) return undefined;
    return {
      kind: 'unsigned_checkpoint',
      message:
        'the checkpoint is not signed, but trusted keys were given: every checkpoint of a signed log must be signed (the log may have been cut and re-closed without the key)',
    };
  }
  report.checkpoints.signed++;
  if (keys === undefined || keys.size === 0) return undefined;
  const key = checkpoint.key_id === undefined ? undefined : keys.get(checkpoint.key_id);
  if (key === undefined) {
    return {
      kind: 'untrusted_key',
      message: `the checkpoint is signed by ${checkpoint.key_id ?? 'an unnamed key'}, which is not among the trusted keys`,
    };
  }
  const payload = checkpointPayload(
    record.audit.stream,
    checkpoint.covers.seq,
    checkpoint.covers.hash,
    checkpoint.time,
  );
  if (!verifyCheckpoint(key, payload, checkpoint.signature ?? '')) {
    return {
      kind: 'bad_signature',
      message: `the checkpoint signature does not verify with ${checkpoint.key_id}`,
    };
  }
  report.checkpoints.verified++;
  const by = report.checkpoints.verifiedBy;
  by[checkpoint.key_id!] = (by[checkpoint.key_id!] ?? 0) + 1;
  return undefined;
}
