#!/usr/bin/env -S node --max-semi-space-size=8 --max-old-space-size=256
// The heap flags on the first line size V8's heap for a server, not for a batch job: steady RSS
// under load ~125 MB instead of ~280 MB, no cost to cold start or throughput (ADR 0014).
// The bin: Node's on-disk compile cache first (a warm start skips compiling the SDK and zod
// again), then config → factory → transport (main.ts), from its bundle (dist/bundle: one file
// instead of hundreds of modules; scripts/bundle.mjs, ADR 0014).
// The Node version check comes first: on an old Node it says which version is needed instead of
// failing on syntax deep in a dependency (everything else loads after it, dynamically).
import '@gatehouse/core/node-check';

const { enableCompileCache } = await import('node:module');
enableCompileCache();
// A variable specifier: the bundle exists only after the build's bundling step.
const entry = './bundle/main.js';
await import(entry);
