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
    offset = decodeCursor(cursor, items.length);
  }
  const end = offset + pageSize;
  const page = items.slice(offset, end);
  return end < items.length ? { page, nextCursor: encodeCursor(end) } : { page };
}

function encodeCursor(offset: number): string {
  return Buffer.from(JSON.stringify({ v: 1, o: offset })).toString('base64url');
}

function decodeCursor(cursor: string, length: number): number {
  try {
    if (cursor.length > 200) throw new Error('too long');
    const value: unknown = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8'));
    if (
      typeof value === 'object' &&
      value !== null &&
      (value as { v?: unknown }).v === 1 &&
      Number.isInteger((value as { o?: unknown }).o)
    ) {
      const offset = (value as { o: number }).o;
      if (offset > 0 && offset <= length) return offset;
    }
  } catch {
    // fall through to the error below
  }
  throw new ProtocolError(
    ProtocolErrorCode.InvalidParams,
    'Invalid cursor: pass the nextCursor of a previous page unchanged, or omit it for the first page',
  );
}
