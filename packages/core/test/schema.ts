import { auditRecordSchema } from '@gatehouse/audit';
import { Ajv2020 } from 'ajv/dist/2020.js';
import addFormats from 'ajv-formats';
import { expect } from 'vitest';

const ajv = new Ajv2020({ allErrors: true, strict: false });
addFormats.default(ajv);
const validate = ajv.compile(auditRecordSchema);

/** Asserts that every record matches the published audit schema. */
export function expectSchemaValid(records: readonly unknown[]): void {
  const problems = records.flatMap((record, i) =>
    validate(record)
      ? []
      : (validate.errors ?? []).map((e) => `record ${i}: ${e.instancePath} ${e.message}`),
  );
  expect(problems).toEqual([]);
}
