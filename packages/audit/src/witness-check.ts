/**
 * A log checked against a witness's copy of its checkpoints (`verify --witness FILE`): what a
 * syslog server or an OpenTelemetry collector received as each checkpoint was made. A host that
 * is taken over can rewrite its log and re-sign every checkpoint with the key it holds; it cannot
 * rewrite what already left it. A witnessed checkpoint names two chain positions of its stream —
 * the record it covers and itself — with the hash each had: the log must hold them with those
 * hashes.
 */
import { readFileSync } from 'node:fs';
import type { KeyObject } from 'node:crypto';
import { checkpointPayload, recordHash, verifyCheckpoint } from './chain.js';
import type { AuditRecord } from './record.js';
import { parseLine } from './read.js';

/** One checkpoint as a witness holds it. */
export interface WitnessedCheckpoint {
  readonly stream: string;
  /** The checkpoint record's own position and hash. */
  readonly seq: number;
  readonly hash: string;
  /** The position and hash it covers. */
  readonly covers: { readonly seq: number; readonly hash: string };
  readonly time: string;
  /** Where the witness holds it: `file:line`. */
  readonly source: string;
}

/** What the witness's files held. */
export interface WitnessCopy {
  readonly checkpoints: WitnessedCheckpoint[];
  /** Entries that claim to be checkpoints and are not genuine (their hash or signature fails). */
  readonly forged: string[];
}

/** The JSON objects a line may carry: after a syslog header, or the line itself. */
function objectsIn(line: string): unknown[] {
  const start = line.indexOf('{');
  if (start === -1) return [];
  let value: unknown;
  try {
    value = parseLine(line.slice(start));
  } catch {
    return [];
  }
  // An OTLP/JSON export (ExportLogsServiceRequest, as a collector's file exporter writes it):
  // each log record's body is a checkpoint's JSON line.
  const resourceLogs = (value as { resourceLogs?: unknown }).resourceLogs;
  if (!Array.isArray(resourceLogs)) return [value];
  const bodies: unknown[] = [];
  for (const rl of resourceLogs as Array<{ scopeLogs?: Array<{ logRecords?: unknown[] }> }>) {
    for (const sl of rl.scopeLogs ?? []) {
      for (const lr of sl.logRecords ?? []) {
        const body = (lr as { body?: { stringValue?: unknown } }).body?.stringValue;
        if (typeof body !== 'string') continue;
        try {
          bodies.push(parseLine(body));
        } catch {
          // not a record: ignored like any foreign line
        }
      }
    }
  }
  return bodies;
}

/**
 * Reads a witness's files: syslog lines (RFC 5424, the record after the header), OTLP/JSON
 * exports, or bare JSON lines. Lines that hold no checkpoint record are skipped. An entry whose
 * own hash fails, or whose signature fails against `keys` (when given), is listed as forged.
 */
export function readWitness(
  paths: readonly string[],
  keys?: ReadonlyMap<string, KeyObject>,
): WitnessCopy {
  const checkpoints: WitnessedCheckpoint[] = [];
  const forged: string[] = [];
  const seen = new Set<string>();
  for (const path of paths) {
    readFileSync(path, 'utf8')
      .split('\n')
      .forEach((line, i) => {
        for (const value of objectsIn(line)) {
          const record = value as AuditRecord;
          const checkpoint = record?.audit?.checkpoint;
          if (record?.event?.action !== 'audit/checkpoint' || checkpoint === undefined) continue;
          const source = `${path}:${i + 1}`;
          let genuine: boolean;
          try {
            genuine = recordHash(record) === record.audit.hash;
            if (genuine && keys !== undefined && keys.size > 0) {
              const key = checkpoint.key_id === undefined ? undefined : keys.get(checkpoint.key_id);
              genuine =
                key !== undefined &&
                checkpoint.signature !== undefined &&
                verifyCheckpoint(
                  key,
                  checkpointPayload(
                    record.audit.stream,
                    checkpoint.covers.seq,
                    checkpoint.covers.hash,
                    checkpoint.time,
                  ),
                  checkpoint.signature,
                );
            }
          } catch {
            genuine = false;
          }
          if (!genuine) {
            forged.push(source);
            continue;
          }
          // The same checkpoint from two witnesses (or resent) counts once.
          const id = `${record.audit.stream}\n${record.audit.seq}\n${record.audit.hash}`;
          if (seen.has(id)) continue;
          seen.add(id);
          checkpoints.push({
            stream: record.audit.stream,
            seq: record.audit.seq,
            hash: record.audit.hash,
            covers: { seq: checkpoint.covers.seq, hash: checkpoint.covers.hash },
            time: checkpoint.time,
            source,
          });
        }
      });
  }
  return { checkpoints, forged };
}

/** Damage a witness finds (the shape of verify's `Damage`, kept here to keep imports one-way). */
export interface WitnessDamage {
  kind: 'rewritten' | 'truncated';
  file: string;
  line: number;
  seq: number;
  message: string;
}

/** What a log showed of the witnessed positions. */
export interface WitnessReport {
  /** Witnessed checkpoints of the streams in the log. */
  checkpoints: number;
  /** Of those, the ones whose positions the log holds with the same hashes. */
  matched: number;
  /** Witnessed checkpoints before the first record of their stream in these files (older files not given). */
  before: number;
  /** Witnessed checkpoints of streams these files do not hold (other servers sharing the witness). */
  otherStreams: number;
  /** Witness entries that are not genuine checkpoint records. */
  forged: string[];
}

/**
 * Follows a log's records (in verify's single pass) and compares them with a witness's copy;
 * `finish` names the first damage: a position whose hash differs (`rewritten`), or a stream that
 * ends before a position the witness saw (`truncated`).
 */
export class WitnessCheck {
  readonly #wanted = new Map<string, Array<{ hash: string; at: WitnessedCheckpoint }>>();
  readonly #copy: WitnessCopy;
  readonly #first = new Map<string, number>();
  readonly #last = new Map<string, { seq: number; file: string; line: number }>();
  /** How many of its two positions the log showed with the witnessed hash, per checkpoint. */
  readonly #confirmed = new Map<WitnessedCheckpoint, number>();
  /** The last position of each stream the witness confirmed: the log is as written up to it. */
  readonly #lastGood = new Map<string, number>();
  #damage: WitnessDamage | undefined;

  constructor(copy: WitnessCopy) {
    this.#copy = copy;
    const want = (key: string, hash: string, at: WitnessedCheckpoint) => {
      const list = this.#wanted.get(key) ?? [];
      list.push({ hash, at });
      this.#wanted.set(key, list);
    };
    for (const c of copy.checkpoints) {
      want(`${c.stream}\n${c.covers.seq}`, c.covers.hash, c);
      want(`${c.stream}\n${c.seq}`, c.hash, c);
    }
  }

  /** One record of the log, in order. */
  see(record: AuditRecord, file: string, line: number): void {
    const { stream, seq, hash } = record.audit;
    if (!this.#first.has(stream)) this.#first.set(stream, seq);
    this.#last.set(stream, { seq, file, line });
    for (const wanted of this.#wanted.get(`${stream}\n${seq}`) ?? []) {
      if (wanted.hash === hash) {
        this.#confirmed.set(wanted.at, (this.#confirmed.get(wanted.at) ?? 0) + 1);
        this.#lastGood.set(stream, seq);
        continue;
      }
      const good = this.#lastGood.get(stream);
      this.#damage ??= {
        kind: 'rewritten',
        file,
        line,
        seq,
        message: `the witness received a checkpoint (${wanted.at.source}, ${wanted.at.time}) saying seq ${seq} of this stream had hash ${wanted.hash}; the log has ${hash}: it was rewritten after that checkpoint left the host — a record ${good === undefined ? 'up to' : `after seq ${good} (the last position the witness confirms) up to`} this one was changed, removed or added`,
      };
    }
  }

  /** The report, and the first damage found. */
  finish(): { report: WitnessReport; damage?: WitnessDamage } {
    const report: WitnessReport = {
      checkpoints: 0,
      matched: 0,
      before: 0,
      otherStreams: 0,
      forged: this.#copy.forged,
    };
    let damage = this.#damage;
    for (const c of this.#copy.checkpoints) {
      const first = this.#first.get(c.stream);
      const last = this.#last.get(c.stream);
      if (first === undefined || last === undefined) {
        report.otherStreams++;
        continue;
      }
      report.checkpoints++;
      if (c.covers.seq < first) {
        report.before++;
        continue;
      }
      if (this.#confirmed.get(c) === 2) report.matched++;
      if (c.seq > last.seq && damage === undefined) {
        damage = {
          kind: 'truncated',
          file: last.file,
          line: last.line,
          seq: last.seq,
          message: `the witness received a checkpoint at seq ${c.seq} of this stream (${c.source}, ${c.time}); the log ends at seq ${last.seq}: records were removed after the checkpoint left the host`,
        };
      }
    }
    return damage === undefined ? { report } : { report, damage };
  }
}
