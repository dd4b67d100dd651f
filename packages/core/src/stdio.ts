import type { Readable, Writable } from 'node:stream';
import type { JSONRPCMessage, Transport } from '@modelcontextprotocol/server';
import { RPC, inspectText, leadingId, rpcError } from './jsonrpc.js';

/** Largest line (one message) read from stdin: the SDK's own read limit. */
export const MAX_LINE_BYTES = 10 * 1024 * 1024;

/** Bytes kept of an oversized line, to read its id from its leading keys. */
const HEAD_BYTES = 4096;

/** Options of {@link LineTransport}. */
export interface LineTransportOptions {
  /** Largest accepted line in bytes (default {@link MAX_LINE_BYTES}). */
  maxLineBytes?: number;
  /** Told about every message refused at the front door (for the log; never the message). */
  onRefused?: (problem: string) => void;
  /** Called right after each message is handed to stdout (the audit writes deferred records). */
  onSent?: () => void;
}

/**
 * The stdio wire: newline-delimited JSON-RPC on stdin/stdout, in place of the SDK's stdio
 * transport (handed to `serveStdio`, which still owns the era and the server instances). What
 * it adds is the front door of `jsonrpc.ts`: a line that is not JSON, nests too deeply, is not a
 * valid message or is larger than the read limit gets exactly one JSON-RPC error answer — with
 * the caller's id when it can be read — and the connection keeps serving. (The SDK's transport
 * drops such lines unanswered, or ends the session on an oversized one.)
 */
export class LineTransport implements Transport {
  onclose?: () => void;
  onerror?: (error: Error) => void;
  onmessage?: (message: JSONRPCMessage) => void;

  readonly #stdin: Readable;
  readonly #stdout: Writable;
  readonly #maxLineBytes: number;
  readonly #onRefused: ((problem: string) => void) | undefined;
  readonly #onSent: (() => void) | undefined;
  #line: Buffer[] = [];
  #lineBytes = 0;
  /** Set while the rest of an oversized line is skipped: its first bytes. */
  #oversized: Buffer | undefined;
  #started = false;
  #closed = false;
  /** Requests read and not yet answered, by id (as JSON): stdin may end before they are. */
  readonly #unanswered = new Set<string>();
  /**
   * Of those, the subscriptions/listen streams: answered when the session ends (the SDK's
   * teardown sends each its closing result), so a drain does not wait for them.
   */
  readonly #streams = new Set<string>();
  #inputEnded = false;
  #whenAnswered: Array<() => void> = [];

  constructor(
    stdin: Readable = process.stdin,
    stdout: Writable = process.stdout,
    options: LineTransportOptions = {},
  ) {
    this.#stdin = stdin;
    this.#stdout = stdout;
    this.#maxLineBytes = options.maxLineBytes ?? MAX_LINE_BYTES;
    this.#onRefused = options.onRefused;
    this.#onSent = options.onSent;
  }

  readonly #ondata = (chunk: Buffer): void => {
    let start = 0;
    for (let newline = chunk.indexOf(0x0a); newline !== -1; newline = chunk.indexOf(0x0a, start)) {
      this.#append(chunk.subarray(start, newline));
      this.#endLine();
      start = newline + 1;
    }
    if (start < chunk.length) this.#append(chunk.subarray(start));
  };

  readonly #onstdinerror = (error: Error): void => {
    this.onerror?.(error);
  };

  readonly #onstdouterror = (error: Error): void => {
    if (this.#closed) return;
    this.onerror?.(error);
    void this.close();
  };

  /**
   * The client closed stdin: nothing more will be read, but every request already read is still
   * answered before the transport closes (whoever runs the server closes it sooner, after its
   * drain deadline, if an answer never comes). An open subscription stream keeps it open: the
   * server's close answers the stream, then closes the transport.
   */
  readonly #onend = (): void => {
    if (this.#inputEnded) return;
    this.#inputEnded = true;
    // The last message may lack its newline: the end of input ends the line too.
    if (this.#lineBytes > 0 || this.#oversized !== undefined) this.#endLine();
    if (this.#unanswered.size === 0) void this.close();
  };

  #append(part: Buffer): void {
    if (part.length === 0) return;
    if (this.#oversized !== undefined) return;
    if (this.#lineBytes + part.length > this.#maxLineBytes) {
      this.#oversized = Buffer.concat([...this.#line, part]).subarray(0, HEAD_BYTES);
      this.#line = [];
      this.#lineBytes = 0;
      return;
    }
    this.#line.push(part);
    this.#lineBytes += part.length;
  }

  #endLine(): void {
    if (this.#oversized !== undefined) {
      const head = this.#oversized.toString('utf8');
      this.#oversized = undefined;
      const problem = `Invalid Request: the message is larger than ${this.#maxLineBytes} bytes`;
      this.#refuse(problem, rpcError(leadingId(head), RPC.invalidRequest, problem));
      return;
    }
    const text = Buffer.concat(this.#line).toString('utf8').replace(/\r$/, '');
    this.#line = [];
    this.#lineBytes = 0;
    if (text.trim() === '') return;
    const inspected = inspectText(text);
    if (!inspected.ok) {
      this.#refuse(inspected.problem, inspected.reply);
      return;
    }
    const message = inspected.message as { id?: unknown; method?: unknown; params?: unknown };
    if (typeof message.method === 'string') {
      if (message.id !== undefined) {
        const key = JSON.stringify(message.id);
        this.#unanswered.add(key);
        if (message.method === 'subscriptions/listen') this.#streams.add(key);
      }
      // A cancelled request gets no answer (the protocol says so): nothing to wait for.
      if (message.method === 'notifications/cancelled') {
        const { requestId } = (message.params ?? {}) as { requestId?: unknown };
        this.#answered(requestId);
      }
    }
    this.onmessage?.(inspected.message);
  }

  #refuse(problem: string, reply: JSONRPCMessage | undefined): void {
    this.#onRefused?.(problem);
    if (reply !== undefined && !this.#closed) {
      this.send(reply).catch((error: unknown) => this.onerror?.(error as Error));
    }
  }

  async start(): Promise<void> {
    if (this.#started) throw new Error('LineTransport already started');
    this.#started = true;
    this.#stdin.on('data', this.#ondata);
    this.#stdin.on('error', this.#onstdinerror);
    this.#stdin.on('end', this.#onend);
    this.#stdin.on('close', this.#onend);
    this.#stdout.on('error', this.#onstdouterror);
    if (this.#stdin.readableEnded || this.#stdin.destroyed) setImmediate(this.#onend);
  }

  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    this.#stdin.off('data', this.#ondata);
    this.#stdin.off('error', this.#onstdinerror);
    this.#stdin.off('end', this.#onend);
    this.#stdin.off('close', this.#onend);
    // Late write failures (a client that went away) must not crash the process.
    this.#stdout.off('error', this.#onstdouterror);
    this.#stdout.on('error', () => undefined);
    if (this.#stdin.listenerCount('data') === 0) this.#stdin.pause();
    this.#line = [];
    this.onclose?.();
  }

  /** A request is answered (or will never be): close once input has ended and none is left. */
  #answered(id: unknown): void {
    if (id === undefined) return;
    const key = JSON.stringify(id);
    if (!this.#unanswered.delete(key)) return;
    this.#streams.delete(key);
    if (this.#onlyStreamsLeft()) {
      for (const resolve of this.#whenAnswered.splice(0)) resolve();
    }
    if (this.#unanswered.size === 0 && this.#inputEnded) setImmediate(() => void this.close());
  }

  #onlyStreamsLeft(): boolean {
    return this.#unanswered.size === this.#streams.size;
  }

  /**
   * Resolves true once every request read so far is answered — open subscription streams aside,
   * which the close answers — and false after `ms` (or on close).
   */
  answered(ms: number): Promise<boolean> {
    if (this.#onlyStreamsLeft()) return Promise.resolve(true);
    if (this.#closed) return Promise.resolve(false);
    return new Promise((resolve) => {
      const timer = setTimeout(() => resolve(false), ms);
      this.#whenAnswered.push(() => {
        clearTimeout(timer);
        resolve(true);
      });
    });
  }

  /**
   * Resolves once everything written to stdout has left the process (true), or false after `ms`:
   * a write that returned true may still sit in the stream's buffer, and exiting then loses it
   * (the closing answers of subscription streams, when the client reads slowly).
   */
  flushed(ms: number): Promise<boolean> {
    const stdout = this.#stdout;
    if (stdout.writableLength === 0 || stdout.destroyed || !stdout.writable) {
      return Promise.resolve(stdout.writableLength === 0);
    }
    return new Promise((resolve) => {
      const timer = setTimeout(() => resolve(false), ms);
      // Write callbacks run in order: this one runs once every earlier chunk is flushed.
      stdout.write('', () => {
        clearTimeout(timer);
        resolve(true);
      });
    });
  }

  send(message: JSONRPCMessage): Promise<void> {
    if (this.#closed) return Promise.reject(new Error('the stdio transport is closed'));
    const sent = message as { id?: unknown; method?: unknown };
    if (sent.method === undefined) this.#answered(sent.id);
    return new Promise((resolve, reject) => {
      const onError = (error: Error): void => {
        this.#stdout.off('drain', onDrain);
        reject(error);
      };
      const onDrain = (): void => {
        this.#stdout.off('error', onError);
        resolve();
      };
      this.#stdout.once('error', onError);
      const written = this.#stdout.write(`${JSON.stringify(message)}\n`);
      this.#onSent?.();
      if (written) {
        this.#stdout.off('error', onError);
        resolve();
      } else {
        this.#stdout.once('drain', onDrain);
      }
    });
  }
}
