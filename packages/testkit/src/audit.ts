// The in-memory audit trail lives in @gatehouse/audit (the core's test harness uses it too).
export { memoryAudit } from '@gatehouse/audit';
export type { MemoryAudit } from '@gatehouse/audit';
