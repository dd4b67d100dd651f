import { ToolError } from '@gatehouse/core';
import type pg from 'pg';

/**
 * The largest message this process reads from PostgreSQL, whatever SQL asked for it
 * (docs/adr/0024-huge-values.md). `pg` buffers a whole message before it parses it, so a row
 * holding a value PostgreSQL built to 100 MB (`repeat('x', 100000000)`) would be held in memory
 * whole — several times over once decoded — long before the row and byte caps could cut it. The
 * guard reads the message headers as they arrive on the socket, ahead of `pg`'s parser, and
 * closes the connection as soon as one announces more than the limit: at most one network chunk
 * of it is ever buffered, and the call fails with the request's own error.
 */

/** Bytes of the largest message read: 8 MiB, or twice the row-data cap when that is more. */
export function frameLimit(maxBytes: number): number {
  return Math.max(8 * 1024 * 1024, 2 * maxBytes);
}

/** The socket of a connected client (pg keeps it on its Connection). */
interface Wired {
  readonly connection: {
    readonly stream: NodeJS.ReadableStream & { destroy(error?: Error): void };
  };
}

/** The error a call gets when a message of `bytes` was refused. */
export class ValueTooLargeError extends ToolError {
  constructor(bytes: number, limit: number) {
    const mb = (n: number) => `${Math.round((n / 1024 / 1024) * 10) / 10} MB`;
    super(
      `PostgreSQL built a row of ${mb(bytes)} for this statement, more than the ${mb(limit)} this server reads, so it stopped reading and closed the connection. Return smaller values: cut long ones in SQL (left(x, 1000)), aggregate, or select fewer columns.`,
      { code: 'value_too_large' },
    );
  }
}

/**
 * Watches every message PostgreSQL sends on `client` from now on (the client must be between
 * messages: just connected, or idle). Call once per connection.
 */
export function guardFrames(client: pg.ClientBase, limit: number): void {
  const stream = (client as unknown as Wired).connection.stream;
  const header = Buffer.alloc(5);
  let have = 0; // bytes of the current header read so far
  let skip = 0; // bytes of the current message's body still to pass
  stream.prependListener('data', (chunk: Buffer) => {
    let at = 0;
    while (at < chunk.length) {
      if (skip > 0) {
        const n = Math.min(skip, chunk.length - at);
        skip -= n;
        at += n;
        continue;
      }
      const n = Math.min(5 - have, chunk.length - at);
      chunk.copy(header, have, at, at + n);
      have += n;
      at += n;
      if (have < 5) return;
      have = 0;
      // Type byte, then the length of the message counting itself (not the type byte).
      const body = header.readUInt32BE(1) - 4;
      if (body > limit) {
        stream.destroy(new ValueTooLargeError(body, limit));
        return;
      }
      skip = body;
    }
  });
}
