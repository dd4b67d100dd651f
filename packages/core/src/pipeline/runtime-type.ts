import type { McpRequestContext } from '@modelcontextprotocol/server';
import type { AuditFailureMode, AuditWriter } from '../audit.js';
import type { Limits } from '../limits.js';
import type { Logger } from '../logger.js';
import type { Policy } from '../policy.js';
import type { Principal } from '../principal.js';
import type { InflightTracker } from './lifetime.js';

/** Everything the pipeline needs besides the definition; built once per process. */
export interface Runtime {
  readonly logger: Logger;
  readonly policy: Policy;
  readonly audit: AuditWriter;
  /** What happens to calls while the audit trail cannot be written (default refuse_writes). */
  readonly auditFailureMode?: AuditFailureMode;
  /**
   * Records of reads are written right after the answer is sent (GATEHOUSE_AUDIT_READ_RECORDS;
   * writes always before their answer). Default false: every record before its answer.
   */
  readonly auditReadsAfterAnswer?: boolean;
  readonly transport: 'stdio' | 'http' | 'memory';
  /** Default tool deadline in milliseconds. */
  readonly toolTimeoutMs: number;
  /** The principal of a request, from the transport (authentication on HTTP, operator on stdio). */
  readonly principal: (ctx: McpRequestContext) => Principal;
  /** Page size of list results. */
  readonly pageSize?: number;
  /** Tracks in-flight calls so shutdown can drain them. */
  readonly inflight?: InflightTracker;
  /** HMAC key for request state; random per process when absent (single replica only). */
  readonly stateKey?: string;
  /** Rate, concurrency and in-flight limits; none when absent. */
  readonly limits?: Limits;
  /**
   * Answers carry structured content beside their text, and listings the output schemas
   * (GATEHOUSE_STRUCTURED_OUTPUT; default false: the model reads one copy).
   */
  readonly structuredOutput?: boolean;
  /** Default size budget of a tool result or resource text, in bytes. */
  readonly maxOutputBytes?: number;
  /** Prometheus metrics of the pipeline; none when absent. */
  readonly metrics?: PipelineMetrics;
  /** Ask the user to confirm write calls, and what to do when the client cannot ask. */
  readonly confirmWrites?: { readonly fallback: 'refuse' | 'proceed' };
}

/** What the pipeline reports to the metrics (metrics.ts implements it on prom-client). */
export interface PipelineMetrics {
  /** One finished tools/call, resources/read or prompts/get (tool: its name, else empty). */
  operation(method: string, tool: string, outcome: string, seconds: number): void;
  /** A call refused by a limit (rule: rate, concurrency, inflight, rate_store). */
  rateLimited(rule: string): void;
}
