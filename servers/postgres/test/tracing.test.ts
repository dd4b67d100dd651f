// With tracing on, a query is a SERVER span with the pipeline stages, and the database work a
// CLIENT span under the handler stage: the system and host, never the SQL or the credentials.
import {
  InMemorySpanExporter,
  SimpleSpanProcessor,
  TracerProvider,
} from '@opentelemetry/sdk-trace';
import { enableTracing } from '@gatehouse/core/runtime';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { companyDatabase, connectPostgres } from './helpers.ts';
import type { CompanyDatabase } from './helpers.ts';

const exporter = new InMemorySpanExporter();
let company: CompanyDatabase;

beforeAll(async () => {
  await enableTracing(
    new TracerProvider({ spanProcessors: [new SimpleSpanProcessor({ exporter })] }),
  );
  company = await companyDatabase(inject('pgAdminUrl'), 'tracing');
});
afterAll(() => company?.close());

describe('tracing a query', () => {
  it('nests the transaction under the handler stage, without SQL or credentials', async () => {
    const harness = await connectPostgres({ POSTGRES_URL: company.url });
    try {
      const sql = "SELECT name FROM customers WHERE country = 'secret-country-marker'";
      const result = await harness.client.callTool({ name: 'postgres_query', arguments: { sql } });
      expect(result.isError).toBeFalsy();
    } finally {
      await harness.close();
    }
    const spans = exporter.getFinishedSpans();
    const request = spans.find((s) => s.name === 'tools/call postgres_query')!;
    const handler = spans.find(
      (s) =>
        s.name === 'gatehouse.handler' &&
        s.parentSpanContext?.spanId === request.spanContext().spanId,
    )!;
    const db = spans.find((s) => s.name === 'postgresql transaction')!;
    expect(db.parentSpanContext?.spanId).toBe(handler.spanContext().spanId);
    expect(db.attributes).toEqual({
      'db.system.name': 'postgresql',
      'server.address': new URL(company.url).hostname,
      'server.port': Number(new URL(company.url).port),
    });
    const everything = JSON.stringify(spans.map((s) => [s.name, s.attributes]));
    expect(everything).not.toContain('secret-country-marker');
    expect(everything).not.toContain(new URL(company.url).password);
  });
});
