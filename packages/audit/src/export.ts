import { forTerminal } from './neutral.js';
import type { AuditRecord } from './record.js';

/** CSV columns of `export --format csv` (and the table of `query`). */
export const CSV_COLUMNS = [
  'timestamp',
  'event_id',
  'action',
  'outcome',
  'reason',
  'principal',
  'auth_method',
  'server',
  'name',
  'target',
  'duration_ms',
  'error_type',
  'error_message',
  'client',
  'seq',
  'hash',
] as const;

/** The flat row of a record. */
export function flatten(r: AuditRecord): Record<(typeof CSV_COLUMNS)[number], string> {
  return {
    timestamp: r['@timestamp'],
    event_id: r.event.id,
    action: r.event.action,
    outcome: r.event.outcome,
    reason: r.event.reason,
    principal: r.user?.id ?? '',
    auth_method: r.auth?.method ?? '',
    server: r.service.name,
    name: r.mcp?.name ?? '',
    target: r.target?.resource ?? '',
    duration_ms: r.event.duration === undefined ? '' : (r.event.duration / 1e6).toFixed(3),
    error_type: r.error?.type ?? '',
    error_message: r.error?.message ?? '',
    client: r.client?.name ?? '',
    seq: String(r.audit.seq),
    hash: r.audit.hash,
  };
}

/**
 * One CSV cell (RFC 4180 quoting). Cells that a spreadsheet would run as a formula (starting
 * with = + - @, tab or CR) get a leading apostrophe: audit data comes from model input.
 */
export function csvCell(value: string): string {
  const safe = /^[=+\-@\t\r]/.test(value) ? `'${value}` : value;
  return /[",\n\r]/.test(safe) ? `"${safe.replace(/"/g, '""')}"` : safe;
}

/** The CSV header line. */
export const csvHeader = (): string => CSV_COLUMNS.join(',');

/** One CSV line. */
export function csvLine(r: AuditRecord): string {
  const row = flatten(r);
  // Neutralised for terminals too: a CSV is as often read with `cat` as in a spreadsheet.
  return CSV_COLUMNS.map((c) => csvCell(forTerminal(row[c]))).join(',');
}

const OCSF_VERSION = '1.6.0';

/**
 * Maps a call record to OCSF API Activity (class 6003). Reads (read tools, resources, prompts)
 * are activity 2 Read; write tools are 99 Other (a tool call does not say whether it created,
 * updated or deleted). Lifecycle and checkpoint records are not API activity: `undefined`.
 */
export function toOcsf(r: AuditRecord): Record<string, unknown> | undefined {
  if (!['tools/call', 'resources/read', 'prompts/get'].includes(r.event.action)) return undefined;
  const write = r.tool?.access === 'write';
  const activityId = write ? 99 : 2;
  const success = r.event.outcome === 'success';
  return {
    class_uid: 6003,
    class_name: 'API Activity',
    category_uid: 6,
    category_name: 'Application Activity',
    activity_id: activityId,
    activity_name: write ? 'Other' : 'Read',
    type_uid: 600300 + activityId,
    type_name: `API Activity: ${write ? 'Other' : 'Read'}`,
    time: Date.parse(r['@timestamp']),
    ...(r.event.duration === undefined ? {} : { duration: Math.round(r.event.duration / 1e6) }),
    severity_id: success ? 1 : r.event.reason === 'denied' ? 3 : 2,
    status_id: success ? 1 : 2,
    status: success ? 'Success' : 'Failure',
    status_detail: r.event.reason,
    actor: {
      user: { uid: r.user?.id ?? 'unknown' },
      ...(r.client?.name === undefined ? {} : { app_name: r.client.name }),
    },
    api: {
      operation: r.event.action,
      service: { name: r.service.name, version: r.service.version },
      ...(r.mcp?.request_id === undefined ? {} : { request: { uid: String(r.mcp.request_id) } }),
      ...(r.error === undefined
        ? {}
        : { response: { error: r.error.type, error_message: r.error.message } }),
    },
    resources: [
      {
        name: r.mcp?.name ?? '',
        type:
          r.event.action === 'tools/call'
            ? 'mcp_tool'
            : r.event.action === 'resources/read'
              ? 'mcp_resource'
              : 'mcp_prompt',
        ...(r.target === undefined ? {} : { uid: r.target.resource }),
      },
    ],
    ...(r.source === undefined ? {} : { src_endpoint: { ip: r.source.ip } }),
    ...(r.user_agent === undefined ? {} : { http_request: { user_agent: r.user_agent.original } }),
    metadata: {
      uid: r.event.id,
      version: OCSF_VERSION,
      log_name: 'gatehouse-audit',
      sequence: r.audit.seq,
      product: {
        name: 'Gatehouse',
        vendor_name: 'Gatehouse',
        version: r.service.version,
        feature: { name: r.service.name },
      },
    },
    unmapped: {
      auth_method: r.auth?.method,
      era: r.mcp?.era,
      protocol_version: r.mcp?.protocol_version,
      tool_definition_hash: r.tool?.definition_hash,
      args_sha256: r.args?.sha256,
      policy: r.policy,
      upstream: r.upstream,
      integrity: { stream: r.audit.stream, seq: r.audit.seq, hash: r.audit.hash },
    },
  };
}
