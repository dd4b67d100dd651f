#!/usr/bin/env node
// On an old Node: which version is needed, before anything newer is loaded.
import './node-check.js';

// A reader that stops early (`gatehouse-audit export … | head`) closes the pipe: that is the end
// of the output the reader wanted, not an error to print.
process.stdout.on('error', (error: NodeJS.ErrnoException) => {
  if (error.code === 'EPIPE') process.exit(process.exitCode ?? 0);
  throw error;
});

const { main } = await import('./cli.js');
process.exitCode = await main(process.argv.slice(2));
