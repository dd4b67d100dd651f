import type { Logger, ToolAnnotations } from '@gatehouse/core';
import * as z from 'zod';
import type { ChannelDirectory } from './channels.js';
import type { Slack } from './client.js';
import type { SlackConfig } from './config.js';
import type { People } from './people.js';

/** What the tools, resources and prompts share; built once per process. */
export interface SlackDeps {
  readonly config: SlackConfig;
  readonly slack: Slack;
  readonly channels: ChannelDirectory;
  readonly people: People;
  readonly logger: Logger;
  /** The workspace's URL (from auth.test at start), for permalinks. */
  readonly workspace: { url?: string };
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
