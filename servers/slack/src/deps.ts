import type { Logger, ToolAnnotations } from '@gatehouse/core';
import * as z from 'zod';
import type { SlackAccounts } from './acting.js';
import type { SlackConfig } from './config.js';

/** What the tools, resources and prompts share; built once per process. */
export interface SlackDeps {
  readonly config: SlackConfig;
  /** Who each call acts as, with that account's client, directory and caches (acting.ts). */
  readonly accounts: SlackAccounts;
  readonly logger: Logger;
}

/** Reads of third-party content in Slack: read-only, open world. */
export const SLACK_READ: ToolAnnotations = {
  readOnlyHint: true,
  destructiveHint: false,
  idempotentHint: true,
  openWorldHint: true,
};

export const ChannelArg = z
  .string()
  .trim()
  .min(2)
  .max(81)
  .describe('Channel id (C0123ABCD) or #name.');

export const TsArg = z
  .string()
  .regex(/^\d{9,11}\.\d{6}$/, 'expected a Slack message ts such as 1764500000.000100');

export const CursorArg = z
  .string()
  .max(500)
  .optional()
  .describe('next_cursor of the previous page.');
