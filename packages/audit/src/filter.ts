import type { AuditRecord } from './record.js';

/** Filters of `query`, `export` and `report`; every given filter must match. */
export interface RecordFilter {
  /** Inclusive lower bound on `@timestamp` (ISO 8601). */
  from?: string;
  /** Exclusive upper bound on `@timestamp` (ISO 8601). */
  to?: string;
  principal?: string;
  /** Tool name (also matches the resource URI or prompt name of other actions). */
  tool?: string;
  /** Server (`service.name`). */
  server?: string;
  /** `success`, `failure`, or a reason such as `denied`. */
  outcome?: string;
  /** `target.resource`; `*` matches any run of characters. */
  target?: string;
  /** `tools/call`, `resources/read`, `prompts/get`, `gatehouse/start`… */
  action?: string;
  /** Keep checkpoints and lifecycle records (left out by default). */
  all?: boolean;
}

const CALLS = new Set(['tools/call', 'resources/read', 'prompts/get']);

function glob(pattern: string): RegExp {
  return new RegExp(
    `^${pattern
      .split('*')
      .map((p) => p.replace(/[.+?^${}()|[\]\\]/g, '\\$&'))
      .join('.*')}$`,
  );
}

/** Parses an ISO time or a relative one (`24h`, `7d`, `30m` ago). */
export function parseTime(value: string, now = new Date()): string {
  const relative = /^(\d+)([mhd])$/.exec(value);
  if (relative) {
    const unit = { m: 60_000, h: 3_600_000, d: 86_400_000 }[relative[2] as 'm' | 'h' | 'd'];
    return new Date(now.getTime() - Number(relative[1]) * unit).toISOString();
  }
  const date = new Date(value);
  if (Number.isNaN(date.getTime()))
    throw new Error(`not a time: "${value}" (use ISO 8601 or 30m, 24h, 7d)`);
  return date.toISOString();
}

/** Builds a predicate from filters. */
export function matcher(filter: RecordFilter): (record: AuditRecord) => boolean {
  const target = filter.target === undefined ? undefined : glob(filter.target);
  return (r) => {
    if (!filter.all && filter.action === undefined && !CALLS.has(r.event.action)) return false;
    if (filter.action !== undefined && r.event.action !== filter.action) return false;
    if (filter.from !== undefined && r['@timestamp'] < filter.from) return false;
    if (filter.to !== undefined && r['@timestamp'] >= filter.to) return false;
    if (filter.principal !== undefined && r.user?.id !== filter.principal) return false;
    if (filter.tool !== undefined && r.mcp?.name !== filter.tool && r.tool?.name !== filter.tool)
      return false;
    if (filter.server !== undefined && r.service.name !== filter.server) return false;
    if (
      filter.outcome !== undefined &&
      r.event.outcome !== filter.outcome &&
      r.event.reason !== filter.outcome
    ) {
      return false;
    }
    if (target !== undefined && !target.test(r.target?.resource ?? '')) return false;
    return true;
  };
}
