// A bare SDK v2 stdio server with the no-op tool (the baseline of the stdio benchmark).
import { serveStdio } from '@modelcontextprotocol/server/stdio';
import { bareFactory } from './bare.mjs';

serveStdio(bareFactory());
