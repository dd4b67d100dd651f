import { defineConfig, envInt, envList, secretText, upstreamUrl } from '@gatehouse/core';
import type { ConfigCheck } from '@gatehouse/core';
import { identityCheck, identityShape } from '@gatehouse/core/identity';
import * as z from 'zod';

/** A Jira project key: upper-case letters and digits, starting with a letter. */
export const PROJECT_KEY = /^[A-Z][A-Z0-9_]{1,19}$/;

/**
 * Which of Atlassian's credentials a value looks like (support.atlassian.com, "Manage API tokens
 * for your Atlassian account": API tokens made since 2023 start ATATT; OAuth 2.0 access tokens of
 * Jira Cloud are JWTs), so a token set under the other variable is named without being shown.
 */
const apiTokenProblem = (value: string): string | undefined =>
  /^eyJ[\w-]+\.eyJ/.test(value)
    ? 'this looks like an OAuth 2.0 access token (a JWT): set it as JIRA_OAUTH_TOKEN instead'
    : undefined;
const oauthTokenProblem = (value: string): string | undefined =>
  value.startsWith('ATATT')
    ? 'this looks like an Atlassian API token (ATATT…): set it as JIRA_API_TOKEN, with JIRA_EMAIL'
    : undefined;

/**
 * An e-mail and API token, or an OAuth token: one of them, complete. In user mode (ADR 0026) the
 * 3LO app's client instead, and a service credential only when a read falls back to it.
 */
const credentials: ConfigCheck = {
  reads: [
    'JIRA_EMAIL',
    'JIRA_API_TOKEN',
    'JIRA_OAUTH_TOKEN',
    'JIRA_OAUTH_CLIENT_ID',
    'JIRA_OAUTH_CLIENT_SECRET',
    'GATEHOUSE_IDENTITY',
    'GATEHOUSE_IDENTITY_READ_FALLBACK',
  ],
  problems: (config) => {
    const basic = config.JIRA_EMAIL !== undefined || config.JIRA_API_TOKEN !== undefined;
    const user = config.GATEHOUSE_IDENTITY === 'user';
    const fallback = (config.GATEHOUSE_IDENTITY_READ_FALLBACK as string[] | undefined) ?? [];
    if (
      user &&
      (config.JIRA_OAUTH_CLIENT_ID === undefined || config.JIRA_OAUTH_CLIENT_SECRET === undefined)
    )
      return [
        "JIRA_OAUTH_CLIENT_ID: user mode needs the Atlassian OAuth 2.0 (3LO) app's client id and JIRA_OAUTH_CLIENT_SECRET (developer.atlassian.com → your app → Settings)",
      ];
    if (user && !basic && config.JIRA_OAUTH_TOKEN === undefined && fallback.length === 0) return [];
    if (basic && config.JIRA_OAUTH_TOKEN !== undefined)
      return [
        'JIRA_OAUTH_TOKEN: set either JIRA_EMAIL and JIRA_API_TOKEN or JIRA_OAUTH_TOKEN, not both',
      ];
    if (basic && (config.JIRA_EMAIL === undefined || config.JIRA_API_TOKEN === undefined))
      return [
        config.JIRA_EMAIL === undefined
          ? 'JIRA_EMAIL: required with JIRA_API_TOKEN (the account the token belongs to)'
          : 'JIRA_API_TOKEN: required with JIRA_EMAIL (an API token of that account)',
      ];
    if (!basic && config.JIRA_OAUTH_TOKEN === undefined)
      return [
        user
          ? 'JIRA_API_TOKEN: GATEHOUSE_IDENTITY_READ_FALLBACK falls back to the service account, so its credentials are required (with JIRA_EMAIL, or JIRA_OAUTH_TOKEN)'
          : 'JIRA_API_TOKEN: required (with JIRA_EMAIL), or JIRA_OAUTH_TOKEN for OAuth 2.0',
      ];
    return [];
  },
};

/** The Jira server's configuration: the core's keys plus `JIRA_*`. */
export const JiraConfigSchema = defineConfig(
  {
    ...identityShape,
    JIRA_URL: upstreamUrl().describe(
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
    JIRA_API_TOKEN: secretText(apiTokenProblem)
      .optional()
      .describe('An Atlassian API token of JIRA_EMAIL (id.atlassian.com → Security → API tokens).'),
    JIRA_OAUTH_TOKEN: secretText(oauthTokenProblem)
      .optional()
      .describe('An OAuth 2.0 access token (bearer), instead of the e-mail and API token.'),
    JIRA_OAUTH_CLIENT_ID: z
      .string()
      .regex(/^[\w-]{8,128}$/, "expected the 3LO app's client id")
      .optional()
      .describe(
        "User mode: the Atlassian OAuth 2.0 (3LO) app's client id, with which each person links their own account.",
      ),
    JIRA_OAUTH_CLIENT_SECRET: secretText().optional().describe("User mode: the 3LO app's secret."),
    JIRA_AUTH_URL: upstreamUrl()
      .default('https://auth.atlassian.com')
      .describe(
        "User mode: Atlassian's authorization server (/authorize, /oauth/token); tests point it at a fake.",
      ),
    JIRA_GATEWAY_URL: upstreamUrl()
      .default('https://api.atlassian.com')
      .describe(
        "User mode: Atlassian's API gateway, which takes people's tokens (/ex/jira/{cloud id}/…, /me, accessible-resources).",
      ),
    JIRA_REQUEST_TIMEOUT_MS: envInt(500, 120_000)
      .default(10_000)
      .describe('How long one request to Jira may take.'),
    JIRA_PAGE_SIZE: envInt(1, 100)
      .default(25)
      .describe('Default number of issues per page (the model may ask for up to 100).'),
    JIRA_DEDUPE_WINDOW_MIN: envInt(1, 1440)
      .default(10)
      .describe(
        'A create or comment identical in everything it sends, repeated within this many minutes, returns the earlier one instead of writing twice.',
      ),
    JIRA_SEARCH_LAG_S: envInt(0, 3_600)
      .default(120)
      .describe(
        "How long Jira's search may take to show a new issue (Jira Cloud's search lags behind writes). A create that got no answer holds back an identical one this long, until search can tell whether it was made.",
      ),
  },
  {
    checks: [credentials, identityCheck],
    // The names other Jira tools and MCP servers read.
    aliases: {
      JIRA_URL: ['JIRA_BASE_URL', 'JIRA_HOST', 'JIRA_SITE', 'ATLASSIAN_URL', 'ATLASSIAN_SITE_URL'],
      JIRA_EMAIL: ['JIRA_USER', 'JIRA_USERNAME', 'ATLASSIAN_EMAIL', 'ATLASSIAN_USER'],
      JIRA_API_TOKEN: ['JIRA_TOKEN', 'JIRA_API_KEY', 'ATLASSIAN_API_TOKEN', 'ATLASSIAN_TOKEN'],
    },
  },
);

/** The parsed configuration of the Jira server. */
export type JiraConfig = z.output<typeof JiraConfigSchema>;
