// The same tool served by a Gatehouse core bin (config, logger, audit, signals: the real thing).
import { baseConfigSchema, runServer } from '@gatehouse/core';
import { coreDefinition } from './core-definition.mjs';

await runServer({ schema: baseConfigSchema, create: () => coreDefinition });
