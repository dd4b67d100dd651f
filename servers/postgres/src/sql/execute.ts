import pg from 'pg';
import type { FieldDef } from 'pg';
import { MASKED } from './masking.js';
import { SqlRefusedError } from './guard.js';

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

/**
 * Which answer columns are masked. Two independent decisions, either one masks: name resolution
 * (the positions that pass a masked value through) and PostgreSQL's own (each column's origin
 * table and attribute in RowDescription, against the masked columns and the view columns that
 * pass them on); and a column PostgreSQL computed (no origin) named like a masked column of a
 * relation read.
 */
export interface MaskPlan {
  /** 0-based answer positions that pass a masked value through. */
  readonly positions: ReadonlySet<number>;
  /** `tableOid:attnum` origins whose values are masked. */
  readonly origins: ReadonlySet<string>;
  /** Names of masked columns, for answer columns without an origin. */
  readonly names: ReadonlySet<string>;
  /**
   * How many columns the answer has, when resolution knows and masking depends on it: an answer
   * of another width is not given (the positions would not be the ones resolved).
   */
  readonly width?: number | undefined;
}

export const NO_MASK: MaskPlan = { positions: new Set(), origins: new Set(), names: new Set() };

// Text stays text for types JSON cannot carry faithfully: dates and times keep their exact
// PostgreSQL form (no time-zone shifts through JS Date), bytea stays `\x…` hex, bigint becomes
// a number only when it is exact.
const TEXT_TYPES = new Set([
  17, 1082, 1083, 1114, 1184, 1186, 1266, 1001, 1182, 1183, 1115, 1185, 1187, 1270,
]);
const INT8 = 20;
const asText = (value: string): string => value;
const int8 = (value: string): number | string => {
  const n = Number(value);
  return Number.isSafeInteger(n) ? n : value;
};

/** The parser of a column's text-format values. */
function parserOf(oid: number): (value: string) => unknown {
  if (TEXT_TYPES.has(oid)) return asText;
  if (oid === INT8) return int8;
  return pg.types.getTypeParser(oid, 'text') as (value: string) => unknown;
}

/**
 * The rows of one statement as they arrive, under the caps: at most `maxRows`, at most
 * `maxBytes` of row JSON, each value at most maxBytes/16 characters (cut with a marker), masked
 * columns replaced (see {@link MaskPlan}) before anything is counted. {@link add} says when no
 * more rows are wanted.
 */
export class CappedRows {
  fields: FieldDef[] = [];
  readonly rows: unknown[][] = [];
  truncatedBy: QueryOutput['truncatedBy'];
  valuesCut = 0;
  private bytes = 2;
  private parsers: Array<(value: string) => unknown> = [];
  private maskIndex: boolean[] = [];
  private readonly maxValueChars: number;
  readonly caps: QueryCaps;
  private readonly mask: MaskPlan;
  /** Set when the answer's columns are not those resolved: no row is kept or given. */
  private unmatched = false;

  constructor(caps: QueryCaps, mask: MaskPlan = NO_MASK) {
    this.caps = caps;
    this.mask = mask;
    this.maxValueChars = Math.max(256, Math.floor(caps.maxBytes / 16));
  }

  /** The statement's columns (its RowDescription). */
  describe(fields: FieldDef[]): void {
    this.fields = fields;
    this.parsers = fields.map((f) => parserOf(f.dataTypeID));
    this.unmatched = this.mask.width !== undefined && fields.length !== this.mask.width;
    this.maskIndex = fields.map(
      (f, i) =>
        this.unmatched ||
        this.mask.positions.has(i) ||
        (f.tableID !== 0
          ? this.mask.origins.has(`${f.tableID}:${f.columnID}`)
          : this.mask.names.has(f.name)),
    );
  }

  /** Takes one row of text values; false once a cap is reached (this row is not kept). */
  add(raw: ReadonlyArray<string | null>): boolean {
    if (this.truncatedBy !== undefined || this.unmatched) return false;
    if (this.rows.length >= this.caps.maxRows) {
      this.truncatedBy = 'max_rows';
      return false;
    }
    const row = new Array<unknown>(raw.length);
    for (let i = 0; i < raw.length; i++) {
      const text = raw[i];
      row[i] =
        this.maskIndex[i] === true
          ? MASKED
          : text === null || text === undefined
            ? null
            : this.cut(this.parsers[i]!(text));
    }
    // The row's JSON size (without serialising it), plus the comma before it in the rows array.
    let size = 2 + Math.max(0, row.length - 1) + (this.rows.length > 0 ? 1 : 0);
    for (const value of row) size += jsonBytes(value);
    if (this.bytes + size > this.caps.maxBytes) {
      this.truncatedBy = 'max_bytes';
      return false;
    }
    this.bytes += size;
    this.rows.push(row);
    return true;
  }

  private cut(value: unknown): unknown {
    const max = this.maxValueChars;
    if (typeof value === 'string' && value.length > max) {
      this.valuesCut++;
      return `${value.slice(0, max)}…[${value.length - max} more characters cut]`;
    }
    if (value !== null && typeof value === 'object') {
      const json = JSON.stringify(value);
      if (json.length > max) {
        this.valuesCut++;
        return `${json.slice(0, max)}…[${json.length - max} more characters cut]`;
      }
    }
    return value;
  }

  /** The result, with each column's type name from `typeNames`. */
  output(typeNames: ReadonlyMap<number, string>): QueryOutput {
    if (this.unmatched) {
      throw new SqlRefusedError(
        'unresolved_reference',
        `the answer has ${this.fields.length} columns where the statement resolved to ${this.mask.width}, so the masked ones could not be told with certainty; nothing was returned.`,
      );
    }
    return {
      columns: this.fields.map((f, i) => ({
        name: f.name,
        type: typeNames.get(f.dataTypeID) ?? `oid ${f.dataTypeID}`,
        ...(this.maskIndex[i] === true ? { masked: true } : {}),
      })),
      rows: this.rows,
      rowCount: this.rows.length,
      truncated: this.truncatedBy !== undefined,
      ...(this.truncatedBy === undefined ? {} : { truncatedBy: this.truncatedBy }),
      valuesCut: this.valuesCut,
    };
  }
}

/** Printable ASCII that JSON writes as is (no quote, no backslash). */
const PLAIN = /^[\x20\x21\x23-\x5b\x5d-\x7e]*$/;

/**
 * The bytes of `JSON.stringify(value)` in UTF-8, exactly, without writing it for the common
 * cases (numbers, booleans, null, plain ASCII strings): the byte cap is checked for every row.
 */
export function jsonBytes(value: unknown): number {
  if (value === null) return 4;
  switch (typeof value) {
    case 'string':
      return PLAIN.test(value) ? value.length + 2 : Buffer.byteLength(JSON.stringify(value));
    case 'number':
      return Number.isFinite(value) ? String(value).length : 4;
    case 'boolean':
      return value ? 4 : 5;
    default:
      return Buffer.byteLength(JSON.stringify(value) ?? 'null');
  }
}
