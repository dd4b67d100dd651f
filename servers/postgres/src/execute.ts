import pg from 'pg';
import type { ClientBase, CustomTypesConfig, FieldDef } from 'pg';
import Cursor from 'pg-cursor';
import type { PostgresDatabase } from './client.js';
import { MASKED } from './masking.js';
import type { MaskedColumn } from './sql-policy.js';

/** One result column. */
export interface ResultColumn {
  name: string;
  type: string;
  /** Present and true when the values of this column are masked. */
  masked?: boolean;
}

/** A query result after the caps. */
export interface QueryOutput {
  columns: ResultColumn[];
  rows: unknown[][];
  rowCount: number;
  truncated: boolean;
  /** Which cap cut the result, when `truncated`. */
  truncatedBy?: 'max_rows' | 'max_bytes';
  /** Values longer than the per-value cap, cut with a marker. */
  valuesCut: number;
}

/** Caps of one query; the model can lower `maxRows`, never raise it above the server's. */
export interface QueryCaps {
  maxRows: number;
  maxBytes: number;
}

// Text stays text for types JSON cannot carry faithfully: dates and times keep their exact
// PostgreSQL form (no time-zone shifts through JS Date), bytea stays `\x…` hex, bigint becomes
// a number only when it is exact.
const TEXT_TYPES = new Set([
  17, 1082, 1083, 1114, 1184, 1186, 1266, 1001, 1182, 1183, 1115, 1185, 1187, 1270,
]);
const INT8 = 20;
const types: CustomTypesConfig = {
  getTypeParser: ((oid: number, format?: string) => {
    if (TEXT_TYPES.has(oid)) return (value: string) => value;
    if (oid === INT8) {
      return (value: string) => {
        const n = Number(value);
        return Number.isSafeInteger(n) ? n : value;
      };
    }
    return pg.types.getTypeParser(oid, format as 'text') as (value: string) => unknown;
  }) as CustomTypesConfig['getTypeParser'],
};

function readBatch(
  cursor: Cursor<unknown[]>,
  rows: number,
): Promise<{ rows: unknown[][]; fields: FieldDef[] }> {
  return new Promise((resolve, reject) => {
    cursor.read(rows, (error, batch, result) => {
      if (error) reject(error);
      else resolve({ rows: batch, fields: result.fields });
    });
  });
}

/**
 * Runs one already-checked statement through a cursor (extended protocol: one statement only)
 * and stops reading at the row cap + 1 or the byte cap, so a huge result is never fetched
 * whole. Masked columns are replaced by origin (RowDescription table/column) or, for
 * expressions over a touched masked table, by name.
 */
export async function executeCapped(
  db: PostgresDatabase,
  client: ClientBase,
  sql: string,
  params: readonly unknown[],
  caps: QueryCaps,
  masked: { all: readonly MaskedColumn[]; touched: readonly MaskedColumn[] },
): Promise<QueryOutput> {
  const cursor = client.query(
    new Cursor<unknown[]>(sql, params as unknown[], { rowMode: 'array', types }),
  );
  const maxValueChars = Math.max(256, Math.floor(caps.maxBytes / 16));
  const rows: unknown[][] = [];
  let bytes = 2;
  let fields: FieldDef[] = [];
  let truncatedBy: QueryOutput['truncatedBy'];
  let valuesCut = 0;
  let done = false;
  let maskIndex: boolean[] = [];
  let batch = Math.min(caps.maxRows + 1, 100);

  const cut = (value: unknown): unknown => {
    if (typeof value === 'string' && value.length > maxValueChars) {
      valuesCut++;
      return `${value.slice(0, maxValueChars)}…[${value.length - maxValueChars} more characters cut]`;
    }
    if (value !== null && typeof value === 'object') {
      const json = JSON.stringify(value);
      if (json.length > maxValueChars) {
        valuesCut++;
        return `${json.slice(0, maxValueChars)}…[${json.length - maxValueChars} more characters cut]`;
      }
    }
    return value;
  };

  let failed = false;
  try {
    while (!done) {
      const read = await readBatch(cursor, batch);
      if (fields.length === 0 && read.fields.length > 0) {
        fields = read.fields;
        maskIndex = maskedFields(fields, masked);
      }
      if (read.rows.length < batch) done = true;
      for (const raw of read.rows) {
        if (rows.length >= caps.maxRows) {
          truncatedBy = 'max_rows';
          break;
        }
        const row = raw.map((value, i) => (maskIndex[i] === true ? MASKED : cut(value)));
        const size = Buffer.byteLength(JSON.stringify(row)) + 1;
        if (bytes + size > caps.maxBytes) {
          truncatedBy = 'max_bytes';
          break;
        }
        bytes += size;
        rows.push(row);
      }
      if (truncatedBy !== undefined) break;
      // Size the next batch to what the byte budget can still take.
      const average = rows.length === 0 ? 256 : bytes / rows.length;
      const fits = Math.floor((caps.maxBytes - bytes) / average) + 1;
      batch = Math.max(1, Math.min(caps.maxRows + 1 - rows.length, fits, 1000));
    }
  } catch (error) {
    // The connection is discarded after an error; closing the portal would only wait on it.
    failed = true;
    throw error;
  } finally {
    if (!done && !failed) await cursor.close();
  }

  const names = await db.typeNamesOf(
    client,
    fields.map((f) => f.dataTypeID),
  );
  return {
    columns: fields.map((f, i) => ({
      name: f.name,
      type: names.get(f.dataTypeID) ?? `oid ${f.dataTypeID}`,
      ...(maskIndex[i] === true ? { masked: true } : {}),
    })),
    rows,
    rowCount: rows.length,
    truncated: truncatedBy !== undefined,
    ...(truncatedBy === undefined ? {} : { truncatedBy }),
    valuesCut,
  };
}

/** Which result columns to mask: by origin, or by name for expressions over a touched table. */
function maskedFields(
  fields: readonly FieldDef[],
  masked: { all: readonly MaskedColumn[]; touched: readonly MaskedColumn[] },
): boolean[] {
  const origins = new Set(masked.all.map((m) => `${m.tableOid}:${m.attnum}`));
  const touchedNames = new Set(masked.touched.map((m) => m.column));
  return fields.map((f) =>
    f.tableID !== 0 ? origins.has(`${f.tableID}:${f.columnID}`) : touchedNames.has(f.name),
  );
}
