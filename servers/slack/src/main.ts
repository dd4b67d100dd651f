import { runServer } from '@gatehouse/core';
import { SlackConfigSchema } from './config.js';
import { SERVICE, createSlackServer } from './server.js';

await runServer({ schema: SlackConfigSchema, service: SERVICE, create: createSlackServer });
