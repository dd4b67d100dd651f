import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { companyDatabase, connectPostgres, text } from './helpers.ts';
import type { CompanyDatabase } from './helpers.ts';

// The operator's own secret list (GATEHOUSE_SECRET_VALUES): two worlds over one real PostgreSQL
// that differ only in the list. A value the database hands back (here built by the query, so
// the model never sends it) reaches the caller without the list and is redacted with it — in
// the answer, the log and the audit record. (This server has no write tools to refuse.)

const SECRET = 'payroll-api-Key-40417';
const SQL = `SELECT 'payroll-api-' || 'Key-' || (40000 + 417)::text AS key`;
let company: CompanyDatabase;
beforeAll(async () => {
  company = await companyDatabase(inject('pgAdminUrl'), 'opsecret');
});
afterAll(async () => {
  await company?.close();
});

describe("the operator's secret list on the Postgres server", () => {
  it('redacts a listed value from answers, logs and records', async () => {
    const env = { POSTGRES_URL: company.url, POSTGRES_AUDIT_SQL: 'true' };
    const control = await connectPostgres(env);
    const plain = await control.client.callTool({
      name: 'postgres_query',
      arguments: { sql: SQL },
    });
    expect(text(plain)).toContain(SECRET); // the oracle can fail
    await control.close();

    const guarded = await connectPostgres({ ...env, GATEHOUSE_SECRET_VALUES: SECRET });
    const answer = await guarded.client.callTool({
      name: 'postgres_query',
      arguments: { sql: SQL },
    });
    expect(answer.isError).toBeFalsy();
    expect(text(answer)).toContain('[REDACTED:GATEHOUSE_SECRET_VALUES]');
    const everything = JSON.stringify([answer, guarded.records]) + guarded.logs();
    expect(everything).not.toContain(SECRET);
    await guarded.close();
  });
});
