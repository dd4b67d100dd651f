#!/usr/bin/env node
// On an old Node: which version is needed, before anything newer is loaded.
import './node-check.js';

const { main } = await import('./cli.js');
process.exitCode = await main(process.argv.slice(2));
