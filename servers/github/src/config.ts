import { defineConfig, envBoolean, envInt, envList, secret } from '@gatehouse/core';
import * as z from 'zod';
import { OWNER_NAME, REPO_NAME } from './scope.js';

/** owner/repo or owner/*, with the names GitHub allows (see parseRepo). */
const repoEntry = (entry: string): boolean => {
  const [owner = '', repo = '', ...rest] = entry.split('/');
  return rest.length === 0 && OWNER_NAME.test(owner) && (repo === '*' || REPO_NAME.test(repo));
};

/** The GitHub server's configuration: the core's keys plus `GITHUB_*`. */
export const GitHubConfigSchema = defineConfig({
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
  GITHUB_TOKEN: secret(z.string().min(1))
    .optional()
    .describe(
      'A fine-grained personal access token (or classic PAT); or use the GitHub App variables.',
    ),
  GITHUB_APP_ID: z
    .string()
    .regex(/^\d+$/, 'expected the numeric app id')
    .optional()
    .describe('GitHub App id (with GITHUB_APP_PRIVATE_KEY and GITHUB_APP_INSTALLATION_ID).'),
  GITHUB_APP_PRIVATE_KEY: secret(z.string().min(1))
    .optional()
    .describe("The GitHub App's private key (PEM)."),
  GITHUB_APP_INSTALLATION_ID: z
    .string()
    .regex(/^\d+$/, 'expected the numeric installation id')
    .optional()
    .describe('The installation of the app on the organisation or account.'),
  GITHUB_API_URL: z
    .url({ protocol: /^https?$/ })
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
});

/** The parsed configuration of the GitHub server. */
export type GitHubConfig = z.output<typeof GitHubConfigSchema>;
