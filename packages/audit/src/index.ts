/** `@gatehouse/audit`: the audit trail's integrity, sinks and readers. Named exports only. */
export { canonicalJson, sha256, sha256Canonical } from './canonical.js';
export {
  checkpointPayload,
  keyIdOf,
  loadSigner,
  recordHash,
  signCheckpoint,
  verifyCheckpoint,
} from './chain.js';
export type { CheckpointSigner } from './chain.js';
export { main } from './cli.js';
export { CSV_COLUMNS, csvCell, csvLine, flatten, toOcsf } from './export.js';
export { matcher, parseTime } from './filter.js';
export { withoutUnsafe } from './neutral.js';
export type { RecordFilter } from './filter.js';
export { orderFiles, readLines, readRecords } from './read.js';
export type { Line } from './read.js';
export { AUDIT_SCHEMA_VERSION } from './record.js';
export type {
  AuditAction,
  AuditCheckpoint,
  AuditEntry,
  AuditIntegrity,
  AuditRecord,
  OutcomeReason,
} from './record.js';
export { ReportBuilder } from './report.js';
export { auditRecordSchema } from './schema.js';
export { fdSink, fileSink, lastJsonLine, rotatedFiles } from './sinks.js';
export { AuditFileBusyError, holdFileLock } from './audit-lock.js';
export type { FileSinkOptions, LineSink } from './sinks.js';
export { loadPublicKeys, verifyLines } from './verify.js';
export type { Damage, DamageKind, VerifyOptions, VerifyReport } from './verify.js';
export { memoryAudit } from './memory.js';
export type { MemoryAudit } from './memory.js';
export { AuditLog, findChainEnd } from './writer.js';
export type { AuditLogOptions, ChainPosition, CheckpointWitness } from './writer.js';
export { readWitness } from './witness-check.js';
export type { WitnessCopy, WitnessReport, WitnessedCheckpoint } from './witness-check.js';
