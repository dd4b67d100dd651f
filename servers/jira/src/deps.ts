import type { Logger, ToolAnnotations } from '@gatehouse/core';
import type { TargetScope } from '@gatehouse/core/saas';
import type { JiraAccounts } from './acting.js';
import type { Jira } from './client.js';
import type { JiraConfig } from './config.js';
import type { CreateJournal } from './journal.js';

/** What the tools, resources and prompts share; built once per process. */
export interface JiraDeps {
  readonly config: JiraConfig;
  readonly scope: TargetScope;
  readonly logger: Logger;
  /** Who each call acts as, with that account's client and journal (acting.ts). */
  readonly accounts: JiraAccounts;
}

/** What one call works with: the shared deps, and the calling account's own client and journal. */
export interface JiraCall extends JiraDeps {
  readonly jira: Jira;
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
