import { randomUUID } from 'node:crypto';
import { hostname } from 'node:os';
import { checkpointPayload, sealRecord, signCheckpoint } from './chain.js';
import type { CheckpointSigner } from './chain.js';
import { AUDIT_SCHEMA_VERSION } from './record.js';
import type { AuditEntry, AuditRecord } from './record.js';
import { lastJsonLine, rotatedFiles } from './sinks.js';
import type { LineSink } from './sinks.js';

/** Where a restarted log continues its chain. */
export interface ChainPosition {
  seq: number;
  hash: string;
  damagedTail?: boolean;
}

/** Options of {@link AuditLog}. */
export interface AuditLogOptions {
  sinks: readonly LineSink[];
  service: { name: string; version: string };
  /** Signs checkpoints; without it checkpoints carry hashes only (algorithm `none`). */
  signer?: CheckpointSigner;
  /** A checkpoint after this many records (and on close). */
  checkpointEvery?: number;
  /** Continue an existing chain (see {@link findChainEnd}). */
  resume?: ChainPosition;
  now?: () => Date;
  /**
   * The last word on every string of every record (keys included), before it is sealed: the
   * core passes its secret scrubber, so no record carries a secret whatever built it.
   */
  scrub?: (text: string) => string;
  /**
   * Where each checkpoint goes as soon as it is written, besides the sinks: witnesses the host
   * cannot rewrite (a syslog server, an OpenTelemetry collector). `verify --witness` checks a log
   * against their copies (docs/audit.md, "Witnesses").
   */
  witnesses?: readonly CheckpointWitness[];
}

/**
 * A receiver of checkpoints off the host. `send` never throws and never blocks the caller: it
 * queues, and delivers in the background (retrying while the receiver is away).
 */
export interface CheckpointWitness {
  readonly name: string;
  /** A checkpoint record and its JSON line, as written to the sinks. */
  send(record: AuditRecord, line: string): void;
  /** Delivers what is queued, for at most `timeoutMs`, and closes. */
  close(timeoutMs: number): Promise<void>;
}

/**
 * `value` with `scrub` applied to every string in it, keys included; the same object (no copy)
 * where nothing changed, which is nearly always.
 */
function scrubbed(value: unknown, scrub: (text: string) => string, depth = 0): unknown {
  if (typeof value === 'string') return scrub(value);
  if (typeof value !== 'object' || value === null || depth > 64) return value;
  if (Array.isArray(value)) {
    const items = value.map((v) => scrubbed(v, scrub, depth + 1));
    return items.every((v, i) => v === value[i]) ? value : items;
  }
  let changed = false;
  const entries = Object.entries(value).map(([k, v]) => {
    const [key, item] = [scrub(k), scrubbed(v, scrub, depth + 1)];
    if (key !== k || item !== v) changed = true;
    return [key, item] as const;
  });
  return changed ? Object.fromEntries(entries) : value;
}

/**
 * The audit log of one process: assigns `seq`, `prev_hash` and `hash`, writes every record to
 * every sink synchronously, and writes a checkpoint every N records and on close. A sink that
 * fails is reported through `failures` (the pipeline decides what that means for calls) and is
 * tried again on the next record.
 */
export class AuditLog {
  readonly stream = randomUUID();
  readonly #sinks: readonly LineSink[];
  readonly #witnesses: readonly CheckpointWitness[];
  readonly #service: { name: string; version: string };
  readonly #signer: CheckpointSigner | undefined;
  readonly #every: number;
  readonly #now: () => Date;
  readonly #scrub: ((text: string) => string) | undefined;
  readonly #host = { hostname: hostname() };
  readonly #process = { pid: process.pid };
  #seq: number;
  #prevHash: string | null;
  #resumed: ChainPosition | undefined;
  /** The last record every sink took: where a declared damage resumes from. */
  #lastWhole: { seq: number; hash: string } | undefined;
  #sinceCheckpoint = 0;
  #closed = false;
  readonly #pending: Array<() => AuditEntry | undefined> = [];
  #flushQueued = false;
  readonly #failures = new Map<string, Error>();

  constructor(options: AuditLogOptions) {
    this.#sinks = options.sinks;
    this.#witnesses = options.witnesses ?? [];
    this.#service = options.service;
    this.#signer = options.signer;
    this.#every = options.checkpointEvery ?? 1000;
    this.#now = options.now ?? (() => new Date());
    this.#scrub = options.scrub;
    this.#seq = options.resume ? options.resume.seq + 1 : 0;
    this.#prevHash = options.resume?.hash ?? null;
    this.#resumed = options.resume;
    this.#lastWhole =
      options.resume === undefined
        ? undefined
        : { seq: options.resume.seq, hash: options.resume.hash };
  }

  /** Sinks whose last write failed, with the error. Empty when every sink is healthy. */
  get failures(): ReadonlyMap<string, Error> {
    return this.#failures;
  }

  /** Records written by this process (checkpoints included). */
  get position(): { seq: number; hash: string | null } {
    return { seq: this.#seq - 1, hash: this.#prevHash };
  }

  /** Appends one record (after any deferred ones); returns it with its integrity fields. */
  append(entry: AuditEntry): AuditRecord {
    if (this.#closed) throw new Error('the audit log is closed');
    this.flush();
    return this.#append(entry);
  }

  /**
   * Queues a record to be built and written once the current answer has gone out: at the end of
   * this event-loop turn, or sooner when anything else is written (`append`, `checkpoint`,
   * `close`) or `flush` is called — so records keep the order they were queued in, and a stop
   * record or a crash record is never written before them. `build` returning undefined writes
   * nothing (it reports its own failure).
   */
  defer(build: () => AuditEntry | undefined): void {
    if (this.#closed) throw new Error('the audit log is closed');
    this.#pending.push(build);
    if (!this.#flushQueued) {
      this.#flushQueued = true;
      setImmediate(this.#flushLater);
    }
  }

  /** Writes every deferred record now. */
  flush(): void {
    while (this.#pending.length > 0) {
      const build = this.#pending.shift()!;
      let entry: AuditEntry | undefined;
      try {
        entry = build();
      } catch {
        continue; // `build` reports its own failures; one must not stop the records after it
      }
      if (entry !== undefined) this.#append(entry);
    }
  }

  /** Deferred records waiting for the end of the turn. */
  get pending(): number {
    return this.#pending.length;
  }

  readonly #flushLater = (): void => {
    this.#flushQueued = false;
    if (!this.#closed) this.flush();
  };

  #append(entry: AuditEntry): AuditRecord {
    const { record } = this.#write(
      this.#scrub === undefined ? entry : (scrubbed(entry, this.#scrub) as AuditEntry),
    );
    if (++this.#sinceCheckpoint >= this.#every) this.#checkpoint();
    return record;
  }

  /** Writes a checkpoint covering everything written so far (no-op when nothing is new). */
  checkpoint(): AuditRecord | undefined {
    this.flush();
    return this.#checkpoint();
  }

  #checkpoint(): AuditRecord | undefined {
    if (this.#sinceCheckpoint === 0 || this.#prevHash === null) return undefined;
    const time = this.#now().toISOString();
    const covers = { seq: this.#seq - 1, hash: this.#prevHash };
    const payload = checkpointPayload(this.stream, covers.seq, covers.hash, time);
    const checkpoint = this.#signer
      ? {
          covers,
          algorithm: 'ed25519' as const,
          key_id: this.#signer.keyId,
          signature: signCheckpoint(this.#signer, payload),
          time,
          records: this.#sinceCheckpoint,
        }
      : { covers, algorithm: 'none' as const, time, records: this.#sinceCheckpoint };
    this.#sinceCheckpoint = 0;
    const { record, line } = this.#write(
      {
        '@timestamp': time,
        event: {
          id: randomUUID(),
          kind: 'event',
          category: ['process'],
          type: ['info'],
          action: 'audit/checkpoint',
          outcome: 'success',
          reason: 'checkpoint',
        },
      },
      checkpoint,
    );
    for (const witness of this.#witnesses) witness.send(record, line);
    return record;
  }

  /**
   * Delivers the checkpoints still queued for the witnesses (after `close`), for at most
   * `timeoutMs`: a process that stops hands its last checkpoint off the host before it exits.
   */
  async closeWitnesses(timeoutMs = 5_000): Promise<void> {
    await Promise.all(this.#witnesses.map((w) => w.close(timeoutMs)));
  }

  /** Writes the closing checkpoint and closes the sinks. */
  close(): void {
    if (this.#closed) return;
    this.checkpoint(); // after the deferred records
    this.#closed = true;
    for (const sink of this.#sinks) {
      try {
        sink.close();
      } catch {
        // closing is best effort; the records are already written
      }
    }
  }

  #write(
    entry: AuditEntry,
    checkpoint?: AuditRecord['audit']['checkpoint'],
  ): { record: AuditRecord; line: string } {
    // The integrity members in canonical key order (the top level is put in order when sealed).
    const record = {
      ...entry,
      service: entry.service ?? this.#service,
      host: this.#host,
      process: this.#process,
      audit: {
        ...(checkpoint ? { checkpoint } : {}),
        hash: '',
        prev_hash: this.#prevHash,
        ...(this.#resumed
          ? {
              resumed: {
                ...(this.#resumed.damagedTail ? { damaged_tail: true } : {}),
                hash: this.#resumed.hash,
                seq: this.#resumed.seq,
              },
            }
          : {}),
        schema_version: AUDIT_SCHEMA_VERSION,
        seq: this.#seq,
        stream: this.stream,
      },
    } as AuditRecord;
    const sealed = sealRecord(record);
    record.audit.hash = sealed.hash;
    this.#resumed = undefined;
    this.#seq++;
    this.#prevHash = sealed.hash;
    const line = `${sealed.line}\n`;
    let whole = true;
    for (const sink of this.#sinks) {
      try {
        sink.write(line);
        this.#failures.delete(sink.name);
      } catch (error) {
        whole = false;
        this.#failures.set(sink.name, error as Error);
      }
    }
    if (whole) {
      this.#lastWhole = { seq: record.audit.seq, hash: sealed.hash };
    } else if (this.#lastWhole !== undefined) {
      // A sink lost this record, maybe after writing part of it (a full disk, a size limit): the
      // next record declares it — the position it resumes from and that what lies between may be
      // torn or missing — so a verifier reads the chain on past the damage, and names it.
      this.#resumed = { ...this.#lastWhole, damagedTail: true };
    }
    return { record, line };
  }
}

/** Where the chain of an audit file (and its rotated predecessors) ends, to resume it. */
export function findChainEnd(path: string): ChainPosition | undefined {
  for (const file of [path, ...rotatedFiles(path).reverse()]) {
    const last = lastJsonLine(file);
    if (last === undefined) continue;
    const audit = (last.value as { audit?: { seq?: unknown; hash?: unknown } } | undefined)?.audit;
    if (typeof audit?.seq === 'number' && typeof audit.hash === 'string') {
      return {
        seq: audit.seq,
        hash: audit.hash,
        ...(last.damagedTail ? { damagedTail: true } : {}),
      };
    }
  }
  return undefined;
}
