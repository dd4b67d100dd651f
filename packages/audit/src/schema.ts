import { AUDIT_SCHEMA_VERSION } from './record.js';

const str = { type: 'string' } as const;
const hash = { type: 'string', pattern: '^sha256:[0-9a-f]{64}$' } as const;
const isoTime = { type: 'string', format: 'date-time' } as const;
const reasons = [
  'ok',
  'tool_error',
  'invalid_params',
  'not_found',
  'denied',
  'rate_limited',
  'timeout',
  'cancelled',
  'upstream_error',
  'internal_error',
  'audit_unavailable',
  'started',
  'stopped',
  'checkpoint',
  'config_invalid',
  'start_refused',
  'auth_failed',
  'security_override',
  'store_unavailable',
  'store_available',
  'linked',
  'link_refused',
];

/**
 * The JSON Schema (2020-12) of an audit record, published as docs/audit.schema.json. The test
 * suites validate every record they produce against it.
 */
export const auditRecordSchema = {
  $schema: 'https://json-schema.org/draft/2020-12/schema',
  $id: `https://gatehouse.invalid/schemas/audit-record-${AUDIT_SCHEMA_VERSION}.json`,
  title: 'Gatehouse audit record',
  description: `One audit event (schema version ${AUDIT_SCHEMA_VERSION}). ECS-compatible names; see docs/audit.md.`,
  type: 'object',
  additionalProperties: false,
  required: ['@timestamp', 'event', 'service', 'host', 'process', 'audit'],
  properties: {
    '@timestamp': isoTime,
    event: {
      type: 'object',
      additionalProperties: false,
      required: ['id', 'kind', 'category', 'type', 'action', 'outcome', 'reason'],
      properties: {
        id: { type: 'string', format: 'uuid' },
        kind: { const: 'event' },
        category: {
          type: 'array',
          minItems: 1,
          items: { enum: ['api', 'authentication', 'configuration', 'process'] },
        },
        type: {
          type: 'array',
          minItems: 1,
          items: {
            enum: ['access', 'creation', 'change', 'denied', 'error', 'info', 'start', 'end'],
          },
        },
        action: {
          enum: [
            'tools/call',
            'resources/read',
            'resources/list',
            'prompts/get',
            'completion/complete',
            'gatehouse/start',
            'gatehouse/start_refused',
            'gatehouse/stop',
            'gatehouse/config_refused',
            'gatehouse/auth_failure',
            'gatehouse/security_override',
            'gatehouse/rate_limit_store',
            'gatehouse/connect',
            'audit/checkpoint',
          ],
        },
        outcome: { enum: ['success', 'failure', 'unknown'] },
        reason: { enum: reasons },
        start: isoTime,
        duration: { type: 'integer', minimum: 0 },
      },
    },
    service: {
      type: 'object',
      additionalProperties: false,
      required: ['name', 'version'],
      properties: { name: str, version: str },
    },
    host: {
      type: 'object',
      additionalProperties: false,
      required: ['hostname'],
      properties: { hostname: str },
    },
    process: {
      type: 'object',
      additionalProperties: false,
      required: ['pid'],
      properties: { pid: { type: 'integer' } },
    },
    user: {
      type: 'object',
      additionalProperties: false,
      required: ['id'],
      properties: {
        id: str,
        effective: {
          type: 'object',
          additionalProperties: false,
          required: ['id', 'name', 'domain'],
          properties: { id: str, name: str, domain: str },
        },
      },
    },
    auth: {
      type: 'object',
      additionalProperties: false,
      required: ['method'],
      properties: {
        method: { enum: ['local', 'none', 'api_key', 'oauth'] },
        credential_id: str,
        upstream: { enum: ['service', 'user', 'service_fallback'] },
      },
    },
    client: {
      type: 'object',
      additionalProperties: false,
      properties: { name: str, version: str },
    },
    source: {
      type: 'object',
      additionalProperties: false,
      required: ['ip'],
      properties: { ip: str },
    },
    user_agent: {
      type: 'object',
      additionalProperties: false,
      required: ['original'],
      properties: { original: str },
    },
    mcp: {
      type: 'object',
      additionalProperties: false,
      properties: {
        request_id: { type: ['string', 'integer'] },
        protocol_version: str,
        era: { enum: ['legacy', 'modern'] },
        transport: { enum: ['stdio', 'http', 'memory'] },
        name: str,
      },
    },
    tool: {
      type: 'object',
      additionalProperties: false,
      required: ['name', 'definition_hash', 'access', 'read_only'],
      properties: {
        name: str,
        definition_hash: hash,
        access: { enum: ['read', 'write'] },
        read_only: { type: 'boolean' },
      },
    },
    target: {
      type: 'object',
      additionalProperties: false,
      required: ['resource'],
      properties: { resource: str },
    },
    args: {
      type: 'object',
      additionalProperties: false,
      required: ['shape', 'sha256'],
      properties: {
        shape: {},
        sha256: hash,
        redacted: {},
        bound: { type: 'object', additionalProperties: hash },
      },
    },
    result: {
      type: 'object',
      additionalProperties: false,
      required: ['bytes', 'items', 'sha256'],
      properties: {
        bytes: { type: 'integer', minimum: 0 },
        items: { type: 'integer', minimum: 0 },
        sha256: hash,
        truncated: { type: 'boolean' },
        input_required: { type: 'boolean' },
      },
    },
    policy: {
      type: 'object',
      additionalProperties: false,
      required: ['decision', 'rule'],
      properties: { decision: { enum: ['allow', 'deny'] }, rule: str },
    },
    sanitizer: {
      type: 'object',
      additionalProperties: false,
      required: ['flags'],
      properties: { flags: { type: 'array', items: str } },
    },
    error: {
      type: 'object',
      additionalProperties: false,
      required: ['type', 'message'],
      properties: { type: str, message: { type: 'string', maxLength: 1024 } },
    },
    upstream: {
      type: 'object',
      additionalProperties: false,
      required: ['status'],
      properties: {
        status: { type: 'integer' },
        request_id: str,
        retries: { type: 'integer', minimum: 0 },
        retry_after_s: { type: 'number', minimum: 0 },
      },
    },
    gatehouse: { type: 'object' },
    audit: {
      type: 'object',
      additionalProperties: false,
      required: ['schema_version', 'stream', 'seq', 'prev_hash', 'hash'],
      properties: {
        schema_version: { const: AUDIT_SCHEMA_VERSION },
        stream: { type: 'string', format: 'uuid' },
        seq: { type: 'integer', minimum: 0 },
        prev_hash: { oneOf: [hash, { type: 'null' }] },
        hash,
        resumed: {
          type: 'object',
          additionalProperties: false,
          required: ['seq', 'hash'],
          properties: {
            seq: { type: 'integer', minimum: 0 },
            hash,
            damaged_tail: { type: 'boolean' },
          },
        },
        checkpoint: {
          type: 'object',
          additionalProperties: false,
          required: ['covers', 'algorithm', 'time', 'records'],
          properties: {
            covers: {
              type: 'object',
              additionalProperties: false,
              required: ['seq', 'hash'],
              properties: { seq: { type: 'integer', minimum: 0 }, hash },
            },
            algorithm: { enum: ['ed25519', 'none'] },
            key_id: str,
            signature: { type: 'string', contentEncoding: 'base64' },
            time: isoTime,
            records: { type: 'integer', minimum: 1 },
          },
        },
      },
    },
  },
} as const;
