import { readFileSync } from 'node:fs';
import type { FakeResponse } from './http-fake.js';

/**
 * Slack publishes no current machine-readable description of its Web API; its SDK team records
 * real responses and merges every field ever seen into one sample per method
 * (java-slack-sdk `json-logs/samples/api/`, MIT, copied in `slack-samples/`). A fake's response
 * is valid when it is a structural subset of its method's sample: every key path it emits exists
 * there with the same JSON type, arrays checked element-wise against the sample's first element.
 * An empty object or array in a sample (`event_payload: {}`) is free-form; `null` accepts anything.
 */

const samples = new Map<string, unknown>();
function sample(method: string): unknown {
  if (!samples.has(method)) {
    const url = new URL(`../slack-samples/${method}.json`, import.meta.url);
    samples.set(method, JSON.parse(readFileSync(url, 'utf8')) as unknown);
  }
  return samples.get(method);
}

const kind = (v: unknown): string => (v === null ? 'null' : Array.isArray(v) ? 'array' : typeof v);

function compare(value: unknown, shape: unknown, path: string, problems: string[]): void {
  if (shape === null) return;
  if (kind(value) !== kind(shape)) {
    problems.push(`${path}: ${kind(value)} where Slack sends ${kind(shape)}`);
    return;
  }
  if (Array.isArray(value)) {
    const [first] = shape as unknown[];
    if (first === undefined) return;
    value.forEach((v, i) => compare(v, first, `${path}[${i}]`, problems));
    return;
  }
  if (kind(value) === 'object') {
    const known = shape as Record<string, unknown>;
    if (Object.keys(known).length === 0) return;
    for (const [key, v] of Object.entries(value as Record<string, unknown>)) {
      if (!Object.hasOwn(known, key))
        problems.push(`${path}.${key}: not in Slack's recorded shape`);
      else compare(v, known[key], `${path}.${key}`, problems);
    }
  }
}

/** Problems of the responses a Slack fake sent, checked against the recorded shapes. */
export function validateSlackResponses(responses: readonly FakeResponse[]): string[] {
  const problems: string[] = [];
  for (const r of responses) {
    const method = r.route.replace(/^\//, '');
    let shape: unknown;
    try {
      shape = sample(method);
    } catch {
      problems.push(`${method}: no recorded shape for this method`);
      continue;
    }
    compare(r.body, shape, method, problems);
  }
  return problems;
}
