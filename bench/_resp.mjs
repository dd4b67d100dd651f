import { connectStdio } from '@gatehouse/testkit';
import { startPostgres } from '@gatehouse/testkit/postgres';
import { seedCompany } from '../servers/postgres/demo/seed.mjs';
import { BENCH_ENV } from './servers.mjs';
const cluster = await startPostgres();
const { readOnlyUrl } = await seedCompany(cluster.adminUrl, `resp_${process.pid}`);
const c = await connectStdio(process.execPath, ['servers/postgres/dist/index.js'], {
  env: { PATH: process.env.PATH, POSTGRES_URL: readOnlyUrl, ...BENCH_ENV },
  stderr: 'ignore',
});
const r = await c.client.callTool({
  name: 'postgres_query',
  arguments: { sql: 'SELECT id, name, country FROM customers WHERE id = 42' },
});
console.log(JSON.stringify(r, null, 1));
const r2 = await c.client.callTool({
  name: 'postgres_query',
  arguments: { sql: 'SELECT * FROM order_items ORDER BY order_id, product_id LIMIT 3' },
});
console.log(JSON.stringify(r2));
await c.close();
await cluster.stop();
