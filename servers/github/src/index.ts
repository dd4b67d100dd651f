#!/usr/bin/env node
// The bin: Node's on-disk compile cache first (a warm start skips compiling the SDK and zod
// again), then config → factory → transport (main.ts).
import { enableCompileCache } from 'node:module';

enableCompileCache();
await import('./main.js');
