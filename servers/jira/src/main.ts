import { runServer } from '@gatehouse/core';
import { JiraConfigSchema } from './config.js';
import { SERVICE, createJiraServer } from './server.js';

await runServer({ schema: JiraConfigSchema, service: SERVICE, create: createJiraServer });
