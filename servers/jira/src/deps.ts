import type { Logger, ToolAnnotations } from '@gatehouse/core';
import type { TargetScope } from '@gatehouse/core/saas';
import type { Jira } from './client.js';
import type { JiraConfig } from './config.js';
import type { CreateJournal } from './journal.js';

/** What the tools, resources and prompts share; built once per process. */
export interface JiraDeps {
  readonly config: JiraConfig;
  readonly jira: Jira;
  readonly scope: TargetScope;
  readonly logger: Logger;
  /** The account's record of its creates (its own user properties). */
  readonly journal: CreateJournal;
}

/** Reads of third-party content in Jira: read-only, open world. */
export const JIRA_READ: ToolAnnotations = {
  readOnlyHint: true,
  destructiveHint: false,
  idempotentHint: true,
  openWorldHint: true,
};
