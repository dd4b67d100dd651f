import { runServer } from '@gatehouse/core';
import { GitHubConfigSchema } from './config.js';
import { SERVICE, createGitHubServer } from './server.js';

await runServer({ schema: GitHubConfigSchema, service: SERVICE, create: createGitHubServer });
