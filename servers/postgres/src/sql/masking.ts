/**
 * Column masking patterns (`POSTGRES_MASK_COLUMNS`): `table.column` or `schema.table.column`,
 * `*` for any schema or table. The column part is always a literal name, so the catalog lookup
 * stays small (`attname = ANY(…)`).
 */

/** One parsed pattern. */
export interface MaskPattern {
  readonly schema: string;
  readonly table: string;
  readonly column: string;
}

/** Parses `POSTGRES_MASK_COLUMNS` entries (already validated by the config schema). */
export function parseMaskPatterns(patterns: readonly string[]): MaskPattern[] {
  return patterns.map((pattern) => {
    const parts = pattern.split('.');
    const column = parts.pop()!;
    const table = parts.pop()!;
    const schema = parts.pop() ?? '*';
    return { schema, table, column };
  });
}

/** Whether a pattern matches `schema.table.column`. */
export function matches(
  pattern: MaskPattern,
  schema: string,
  table: string,
  column: string,
): boolean {
  return (
    pattern.column === column &&
    (pattern.table === '*' || pattern.table === table) &&
    (pattern.schema === '*' || pattern.schema === schema)
  );
}

/** The placeholder a masked value is replaced with. */
export const MASKED = '[masked]';
