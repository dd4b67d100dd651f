#!/usr/bin/env node
// The bin: Node's on-disk compile cache first (a warm start skips compiling the SDK and zod
// again), then config → factory → transport (main.ts).
// The Node version check comes first: on an old Node it says which version is needed instead of
// failing on syntax deep in a dependency (everything else loads after it, dynamically).
import '@gatehouse/core/node-check';

const { enableCompileCache } = await import('node:module');
enableCompileCache();
await import('./main.js');
