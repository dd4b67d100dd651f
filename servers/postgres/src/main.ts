import { runServer } from '@gatehouse/core';
import { PostgresConfigSchema } from './config.js';
import { SERVICE, createPostgresServer } from './server.js';

await runServer({ schema: PostgresConfigSchema, service: SERVICE, create: createPostgresServer });
