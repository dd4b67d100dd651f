import { startPostgres } from './postgres.js';

/** What the vitest global-setup context must offer (structural, so the testkit needs no vitest). */
interface ProvideContext {
  provide(key: 'pgAdminUrl', value: string): void;
}

/**
 * vitest `globalSetup` (declare `pgAdminUrl: string` in vitest's `ProvidedContext` in the
 * consuming package): one PostgreSQL per test run (embedded, or GATEHOUSE_TEST_PG_URL), its
 * admin URL provided as `pgAdminUrl`; test files take a fresh database with `freshDatabase`.
 */
export default async function setup(context: ProvideContext): Promise<() => Promise<void>> {
  // eslint-disable-next-line no-restricted-syntax -- the test harness's one configuration input
  const server = await startPostgres(process.env.GATEHOUSE_TEST_PG_URL);
  context.provide('pgAdminUrl', server.adminUrl);
  return () => server.stop();
}
