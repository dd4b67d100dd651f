import type { AuditRecord } from './record.js';
import type { LineSink } from './sinks.js';
import { AuditLog } from './writer.js';

/** An audit trail kept in memory: the real writer (hash chain), its records as objects. */
export interface MemoryAudit {
  readonly audit: AuditLog;
  /** Every record written so far, checkpoints left out. */
  readonly records: AuditRecord[];
}

/** A real `AuditLog` whose sink collects the records, for assertions in tests and benchmarks. */
export function memoryAudit(service = { name: 'test', version: '1.0.0' }): MemoryAudit {
  const records: AuditRecord[] = [];
  const sink: LineSink = {
    name: 'memory',
    write: (line) => {
      const record = JSON.parse(line) as AuditRecord;
      if (record.event.action !== 'audit/checkpoint') records.push(record);
    },
    close: () => undefined,
  };
  return { audit: new AuditLog({ sinks: [sink], service }), records };
}
