import { defineConfig, envInt, envList, secret } from '@gatehouse/core';
import * as z from 'zod';

/** A Jira project key: upper-case letters and digits, starting with a letter. */
export const PROJECT_KEY = /^[A-Z][A-Z0-9_]{1,19}$/;

/** The Jira server's configuration: the core's keys plus `JIRA_*`. */
export const JiraConfigSchema = defineConfig({
  JIRA_URL: z
    .url({ protocol: /^https?$/ })
    .describe(
      'The Jira Cloud site, e.g. https://acme.atlassian.net (Data Center is not supported).',
    ),
  JIRA_PROJECTS: envList
    .pipe(
      z
        .array(z.string().regex(PROJECT_KEY, 'expected Jira project keys (OPS, WEB)'))
        .min(1, 'name at least one project'),
    )
    .describe(
      'The projects the tools may touch (keys). Search is always confined to them; an issue of another project is refused, also when its key moved.',
    ),
  JIRA_EMAIL: z
    .email()
    .optional()
    .describe('The account of the API token (with JIRA_API_TOKEN); or use JIRA_OAUTH_TOKEN.'),
  JIRA_API_TOKEN: secret(z.string().min(1))
    .optional()
    .describe('An Atlassian API token of JIRA_EMAIL (id.atlassian.com → Security → API tokens).'),
  JIRA_OAUTH_TOKEN: secret(z.string().min(1))
    .optional()
    .describe('An OAuth 2.0 access token (bearer), instead of the e-mail and API token.'),
  JIRA_REQUEST_TIMEOUT_MS: envInt(500, 120_000)
    .default(10_000)
    .describe('How long one request to Jira may take.'),
  JIRA_PAGE_SIZE: envInt(1, 100)
    .default(25)
    .describe('Default number of issues per page (the model may ask for up to 100).'),
});

/** The parsed configuration of the Jira server. */
export type JiraConfig = z.output<typeof JiraConfigSchema>;
