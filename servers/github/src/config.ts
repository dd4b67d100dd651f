import {
  defineConfig,
  envBoolean,
  envInt,
  envList,
  secretText,
  upstreamUrl,
} from '@gatehouse/core';
import type { ConfigCheck } from '@gatehouse/core';
import { identityCheck, identityShape } from '@gatehouse/core/identity';
import * as z from 'zod';
import { OWNER_NAME, REPO_NAME } from './names.js';

/** owner/repo or owner/*, with the names GitHub allows (see parseRepo). */
const repoEntry = (entry: string): boolean => {
  const [owner = '', repo = '', ...rest] = entry.split('/');
  return rest.length === 0 && OWNER_NAME.test(owner) && (repo === '*' || REPO_NAME.test(repo));
};

/**
 * What a GitHub token looks like (docs.github.com, "About authentication to GitHub": ghp_ classic,
 * github_pat_ fine-grained, gho_/ghu_/ghs_/ghr_ OAuth, user-to-server, installation, refresh),
 * or 40 hex digits for a classic token made before prefixes (2021).
 */
function tokenProblem(value: string): string | undefined {
  if (/^(?:gh[pousr]_[A-Za-z0-9]+|github_pat_\w+|[0-9a-f]{40})$/.test(value)) return undefined;
  if (/^xox[a-z]-|^ATATT/.test(value))
    return 'this is not a GitHub token (it looks like a Slack or Atlassian one)';
  return 'not a GitHub token: one starts ghp_ (classic) or github_pat_ (fine-grained), or is 40 hex digits (a classic token from before 2021)';
}

const APP = ['GITHUB_APP_ID', 'GITHUB_APP_PRIVATE_KEY', 'GITHUB_APP_INSTALLATION_ID'] as const;

/**
 * A token or a GitHub App, not both, and all of the app's variables. In user mode (ADR 0026)
 * a service credential is needed only when a read falls back to it, and the app's OAuth client
 * is needed.
 */
const credentials: ConfigCheck = {
  reads: [
    'GITHUB_TOKEN',
    ...APP,
    'GITHUB_OAUTH_CLIENT_ID',
    'GITHUB_OAUTH_CLIENT_SECRET',
    'GATEHOUSE_IDENTITY',
    'GATEHOUSE_IDENTITY_READ_FALLBACK',
  ],
  problems: (config) => {
    const app = APP.some((key) => config[key] !== undefined);
    const user = config.GATEHOUSE_IDENTITY === 'user';
    const fallback = (config.GATEHOUSE_IDENTITY_READ_FALLBACK as string[] | undefined) ?? [];
    if (app && config.GITHUB_TOKEN !== undefined)
      return [
        'GITHUB_TOKEN: set either a token or the GitHub App variables (GITHUB_APP_*), not both',
      ];
    if (app && APP.some((key) => config[key] === undefined))
      return [
        'GITHUB_APP_ID: a GitHub App needs GITHUB_APP_ID, GITHUB_APP_PRIVATE_KEY and GITHUB_APP_INSTALLATION_ID',
      ];
    if (
      user &&
      (config.GITHUB_OAUTH_CLIENT_ID === undefined ||
        config.GITHUB_OAUTH_CLIENT_SECRET === undefined)
    )
      return [
        "GITHUB_OAUTH_CLIENT_ID: user mode needs the GitHub App's client id and GITHUB_OAUTH_CLIENT_SECRET (the app's settings page, with user-to-server token expiration on)",
      ];
    if (!app && config.GITHUB_TOKEN === undefined && (!user || fallback.length > 0))
      return [
        user
          ? 'GITHUB_TOKEN: GATEHOUSE_IDENTITY_READ_FALLBACK falls back to the service credential, so one is required (a token, or the GitHub App variables)'
          : 'GITHUB_TOKEN: required (or GITHUB_APP_ID, GITHUB_APP_PRIVATE_KEY and GITHUB_APP_INSTALLATION_ID for a GitHub App)',
      ];
    return [];
  },
};

/** The GitHub server's configuration: the core's keys plus `GITHUB_*`. */
export const GitHubConfigSchema = defineConfig(
  {
    ...identityShape,
    GITHUB_REPOS: envList
      .pipe(
        z
          .array(
            z
              .string()
              .refine(repoEntry, 'expected owner/repo or owner/* entries with names GitHub allows'),
          )
          .min(1, 'name at least one repository (owner/repo or owner/*)'),
      )
      .describe(
        'The repositories the tools may touch (owner/repo, or owner/* for all of an owner); search is always confined to them.',
      ),
    GITHUB_TOKEN: secretText(tokenProblem)
      .optional()
      .describe(
        'A fine-grained personal access token (or classic PAT); or use the GitHub App variables.',
      ),
    GITHUB_APP_ID: z
      .string()
      .regex(/^\d+$/, 'expected the numeric app id')
      .optional()
      .describe('GitHub App id (with GITHUB_APP_PRIVATE_KEY and GITHUB_APP_INSTALLATION_ID).'),
    GITHUB_APP_PRIVATE_KEY: secretText().optional().describe("The GitHub App's private key (PEM)."),
    GITHUB_APP_INSTALLATION_ID: z
      .string()
      .regex(/^\d+$/, 'expected the numeric installation id')
      .optional()
      .describe('The installation of the app on the organisation or account.'),
    GITHUB_OAUTH_CLIENT_ID: z
      .string()
      .regex(/^[\w.-]{1,100}$/, "expected the app's client id (Iv23…)")
      .optional()
      .describe(
        "User mode: the GitHub App's client id, with which each person links their own account.",
      ),
    GITHUB_OAUTH_CLIENT_SECRET: secretText()
      .optional()
      .describe("User mode: the GitHub App's client secret."),
    GITHUB_WEB_URL: upstreamUrl()
      .optional()
      .describe(
        "User mode: GitHub's web address, where people authorize the app (default: https://github.com, or the GitHub Enterprise host of GITHUB_API_URL).",
      ),
    GITHUB_API_URL: upstreamUrl()
      .default('https://api.github.com')
      .describe('REST API base URL; GitHub Enterprise Server: https://HOST/api/v3.'),
    GITHUB_TRUSTED_AUTHORS_ONLY: envBoolean
      .default(false)
      .describe(
        'Hide titles, bodies and comments written by people without push access to the repository (a content filter against prompt injection, not an access control).',
      ),
    GITHUB_PAGE_SIZE: envInt(1, 100)
      .default(30)
      .describe('Default number of issues or comments per page (the model may ask for up to 100).'),
    GITHUB_REQUEST_TIMEOUT_MS: envInt(500, 120_000)
      .default(10_000)
      .describe('How long one request to GitHub may take.'),
    GITHUB_DEDUPE_WINDOW_MIN: envInt(1, 1440)
      .default(60)
      .describe(
        'A create or comment repeated within this many minutes returns the earlier one instead of posting twice.',
      ),
  },
  {
    checks: [credentials, identityCheck],
    // The names the gh CLI and GitHub's own MCP server read.
    aliases: { GITHUB_TOKEN: ['GH_TOKEN', 'GITHUB_PERSONAL_ACCESS_TOKEN', 'GITHUB_PAT'] },
  },
);

/** The parsed configuration of the GitHub server. */
export type GitHubConfig = z.output<typeof GitHubConfigSchema>;
