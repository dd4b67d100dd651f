import { createRequire } from 'node:module';
import type { ValidateFunction } from 'ajv';
import type { FakeResponse } from './github-fake.js';

/**
 * Validates the GitHub fake's responses against GitHub's published OpenAPI description
 * (`@octokit/openapi`, api.github.com). OpenAPI 3.0's `nullable` is rewritten to JSON Schema
 * (`type: [T, 'null']`, or `anyOf […, null]` beside a `$ref`/`allOf`) so Ajv can compile it.
 */

const require = createRequire(import.meta.url);

type Json = Record<string, unknown>;

interface AjvLike {
  compile(schema: Json): ValidateFunction;
}

interface Spec {
  paths: Record<string, Record<string, { responses: Record<string, Json> }>>;
  components: Json & { responses: Record<string, Json> };
}

function convert(node: unknown): unknown {
  if (Array.isArray(node)) return node.map(convert);
  if (node === null || typeof node !== 'object') return node;
  const out: Json = {};
  for (const [k, v] of Object.entries(node as Json)) {
    if (!['nullable', 'example', 'examples', 'discriminator'].includes(k)) out[k] = convert(v);
  }
  if ((node as Json).nullable === true) {
    if (Array.isArray(out.enum)) out.enum = [...(out.enum as unknown[]), null];
    if (typeof out.type === 'string') return { ...out, type: [out.type, 'null'] };
    return { anyOf: [out, { type: 'null' }] };
  }
  return out;
}

let loaded: { spec: Spec; ajv: AjvLike; cache: Map<string, ValidateFunction> } | undefined;

function load() {
  if (loaded !== undefined) return loaded;
  const spec = require('@octokit/openapi/generated/api.github.com.json') as Spec;
  const Ajv = (require('ajv') as { default: new (options: Json) => AjvLike }).default;
  const addFormats = (require('ajv-formats') as { default: (ajv: AjvLike) => void }).default;
  const ajv = new Ajv({ strict: false, allErrors: true, inlineRefs: false });
  addFormats(ajv);
  loaded = { spec, ajv, cache: new Map() };
  return loaded;
}

/** The documented JSON body schema of a response, if the operation documents that status. */
function documentedSchema(spec: Spec, method: string, route: string, status: number) {
  let response = spec.paths[route]?.[method.toLowerCase()]?.responses[String(status)];
  if (response === undefined) return undefined;
  if (typeof response.$ref === 'string') {
    response = spec.components.responses[response.$ref.split('/').at(-1)!];
  }
  const content = response?.content as Record<string, { schema?: Json }> | undefined;
  return content?.['application/json']?.schema;
}

/**
 * The components a schema refers to, transitively, converted: only these are compiled with it
 * (the whole description is 4 MB; converting and registering all of it was most of the cost).
 */
function referenced(spec: Spec, schema: unknown): Json {
  const components: Record<string, Json> = {};
  const pending = [schema];
  while (pending.length > 0) {
    const node = pending.pop();
    if (Array.isArray(node)) {
      pending.push(...(node as unknown[]));
      continue;
    }
    if (node === null || typeof node !== 'object') continue;
    for (const [key, value] of Object.entries(node as Json)) {
      if (key === '$ref' && typeof value === 'string' && value.startsWith('#/components/')) {
        const [, , kind, name] = value.split('/') as [string, string, string, string];
        const section = (components[kind] ??= {});
        if (section[name] === undefined) {
          const target = (spec.components[kind] as Json | undefined)?.[name];
          section[name] = convert(target);
          pending.push(target);
        }
      } else {
        pending.push(value);
      }
    }
  }
  return components;
}

function compiled(key: string, schema: Json): ValidateFunction {
  const { ajv, cache, spec } = load();
  let fn = cache.get(key);
  if (fn === undefined) {
    // Refs stay `#/components/…`: the components they need sit at the root beside the schema.
    fn = ajv.compile({ ...(convert(schema) as Json), components: referenced(spec, schema) });
    cache.set(key, fn);
  }
  return fn;
}

/**
 * Checks every recorded response: a documented status against its schema; an undocumented
 * error status (401, 5xx, a secondary rate limit) against `basic-error`. Returns one line per
 * problem, empty when every body is valid.
 */
export function validateGitHubResponses(responses: readonly FakeResponse[]): string[] {
  const { spec } = load();
  const problems: string[] = [];
  for (const r of responses) {
    const operation = `${r.method} ${r.route}`;
    if (spec.paths[r.route]?.[r.method.toLowerCase()] === undefined) {
      problems.push(`${operation}: not an operation of the GitHub API description`);
      continue;
    }
    const schema = documentedSchema(spec, r.method, r.route, r.status);
    if (schema === undefined && r.status < 400) {
      problems.push(`${operation} ${r.status}: status not documented`);
      continue;
    }
    const fn =
      schema === undefined
        ? compiled('basic-error', { $ref: '#/components/schemas/basic-error' })
        : compiled(`${operation} ${r.status}`, schema);
    if (!fn(r.body)) {
      const errors = (fn.errors ?? [])
        .slice(0, 5)
        .map((e) => `${e.instancePath || '(root)'} ${e.message ?? ''}`)
        .join('; ');
      problems.push(`${operation} ${r.status}: ${errors}`);
    }
  }
  return problems;
}
