import { ProtocolError, ProtocolErrorCode } from '@modelcontextprotocol/server';

/**
 * Opaque list cursors (an offset, base64url-encoded JSON). Lists are deterministic (definition
 * order), so an offset is stable across replicas and requests. A cursor that does not decode,
 * or points past the list, is a -32602 as the spec recommends.
 */
export function paginate<T>(
  items: readonly T[],
  cursor: string | undefined,
  pageSize: number,
): { page: T[]; nextCursor?: string } {
  let offset = 0;
  if (cursor !== undefined) {
    const decoded = cursorOffset(cursor);
    if (decoded === undefined || decoded > items.length) {
      throw new ProtocolError(ProtocolErrorCode.InvalidParams, INVALID_CURSOR);
    }
    offset = decoded;
  }
  const end = offset + pageSize;
  const page = items.slice(offset, end);
  return end < items.length ? { page, nextCursor: encodeCursor(end) } : { page };
}

export const INVALID_CURSOR =
  'Invalid cursor: pass the nextCursor of a previous page unchanged, or omit it for the first page';

/** Whether a cursor is one this server could have written (before the list is known). */
export const cursorShape = (cursor: string): boolean => cursorOffset(cursor) !== undefined;

function encodeCursor(offset: number): string {
  return Buffer.from(JSON.stringify({ v: 1, o: offset })).toString('base64url');
}

function cursorOffset(cursor: string): number | undefined {
  if (cursor.length > 200) return undefined;
  try {
    const value: unknown = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8'));
    if (
      typeof value === 'object' &&
      value !== null &&
      (value as { v?: unknown }).v === 1 &&
      Number.isInteger((value as { o?: unknown }).o) &&
      (value as { o: number }).o > 0
    ) {
      return (value as { o: number }).o;
    }
  } catch {
    // not JSON: not a cursor
  }
  return undefined;
}
