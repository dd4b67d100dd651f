import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import type { ValidateFunction } from 'ajv';

/**
 * The official Atlassian Document Format JSON schema (`@atlaskit/adf-schema`
 * dist/json-schema/v1/full.json, Apache-2.0, copied in `adf-schema/`): a draft-04 schema, hence
 * ajv-draft-04. Every ADF document a server sends to the Jira fake is checked against it.
 */
let validate: ValidateFunction | undefined;

function compile(): ValidateFunction {
  const Ajv = (
    createRequire(import.meta.url)('ajv-draft-04') as {
      default: new (options: object) => { compile(schema: object): ValidateFunction };
    }
  ).default;
  const schema = JSON.parse(
    readFileSync(new URL('../adf-schema/full.json', import.meta.url), 'utf8'),
  ) as object;
  return new Ajv({ strict: false }).compile(schema);
}

/** Problems of an ADF document against the official schema; empty when it is valid. */
export function validateAdf(doc: unknown): string[] {
  const check = (validate ??= compile());
  if (check(doc)) return [];
  return (check.errors ?? [])
    .slice(0, 5)
    .map((e) => `${e.instancePath || '/'} ${e.message ?? 'invalid'}`);
}
