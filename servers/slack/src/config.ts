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

/** A channel as the operator names it: an id (C…, G…, D…) or #name. */
export const CHANNEL_ENTRY = /^(?:[CGD][A-Z0-9]{6,12}|#[a-z0-9][a-z0-9._-]{0,79})$/;

const channelList = (what: string) =>
  envList.pipe(
    z.array(z.string().regex(CHANNEL_ENTRY, `expected channel ids (C0123ABCD) or #names ${what}`)),
  );

/**
 * Why a value is not a bot token, by its prefix (api.slack.com, "Token types": xoxb- bot, xoxp-
 * user, xapp- app-level, xoxe. a rotating token that expires within 12 hours).
 */
function botTokenProblem(value: string): string | undefined {
  if (value.startsWith('xoxb-')) return undefined;
  const kind = value.startsWith('xoxp-')
    ? 'a user token (xoxp-): the server acts as the app’s bot, so use its bot token'
    : value.startsWith('xapp-')
      ? 'an app-level token (xapp-), which cannot call the Web API methods used here'
      : value.startsWith('xoxe')
        ? 'a rotating token (xoxe), which expires within 12 hours: turn token rotation off for the app'
        : undefined;
  return `expected the bot token, which starts xoxb- (OAuth & Permissions → Bot User OAuth Token)${kind === undefined ? '' : `; this is ${kind}`}`;
}

/**
 * The bot token, unless every call acts as a person (ADR 0026) — then the app's OAuth client and
 * the workspace are needed instead, and the bot token only when a read falls back to it.
 */
const credentials: ConfigCheck = {
  reads: [
    'SLACK_BOT_TOKEN',
    'SLACK_OAUTH_CLIENT_ID',
    'SLACK_OAUTH_CLIENT_SECRET',
    'SLACK_TEAM_ID',
    'SLACK_ATTRIBUTION',
    'GATEHOUSE_IDENTITY',
    'GATEHOUSE_IDENTITY_READ_FALLBACK',
  ],
  problems: (config) => {
    const user = config.GATEHOUSE_IDENTITY === 'user';
    const fallback = (config.GATEHOUSE_IDENTITY_READ_FALLBACK as string[] | undefined) ?? [];
    const problems: string[] = [];
    if (config.SLACK_BOT_TOKEN === undefined && (!user || fallback.length > 0)) {
      problems.push(
        user
          ? 'SLACK_BOT_TOKEN: GATEHOUSE_IDENTITY_READ_FALLBACK falls back to the bot, so its token is required'
          : 'SLACK_BOT_TOKEN: required (set SLACK_BOT_TOKEN or SLACK_BOT_TOKEN_FILE)',
      );
    }
    if (!user) {
      if (config.SLACK_ATTRIBUTION !== undefined) {
        problems.push(
          'SLACK_ATTRIBUTION: only means something with GATEHOUSE_IDENTITY=user (the bot’s posts already show the app)',
        );
      }
      return problems;
    }
    if (
      config.SLACK_OAUTH_CLIENT_ID === undefined ||
      config.SLACK_OAUTH_CLIENT_SECRET === undefined
    ) {
      problems.push(
        "SLACK_OAUTH_CLIENT_ID: user mode needs the Slack app's client id and SLACK_OAUTH_CLIENT_SECRET (Basic Information → App Credentials)",
      );
    }
    if (config.SLACK_TEAM_ID === undefined) {
      problems.push(
        'SLACK_TEAM_ID: user mode needs the workspace’s id (T…): a person may link an account of this workspace only',
      );
    }
    return problems;
  },
};

/** The Slack server's configuration: the core's keys plus `SLACK_*`. */
export const SlackConfigSchema = defineConfig(
  {
    ...identityShape,
    SLACK_BOT_TOKEN: secretText(botTokenProblem)
      .optional()
      .describe(
        "The bot token of the workspace's Slack app (xoxb-…); see slack-app-manifest.yaml. Not needed in user mode unless a read falls back to the bot.",
      ),
    SLACK_OAUTH_CLIENT_ID: z
      .string()
      .regex(/^\d+\.\d+$/, "expected the Slack app's client id (digits.digits)")
      .optional()
      .describe(
        "User mode: the Slack app's client id, with which each person links their own account (user scopes).",
      ),
    SLACK_OAUTH_CLIENT_SECRET: secretText()
      .optional()
      .describe("User mode: the Slack app's client secret."),
    SLACK_TEAM_ID: z
      .string()
      .regex(/^[TE][A-Z0-9]{6,12}$/, 'expected a workspace id (T0123ABCD)')
      .optional()
      .describe(
        'User mode: the workspace (T…) people link accounts of; an account of any other workspace is refused.',
      ),
    SLACK_WEB_URL: upstreamUrl()
      .default('https://slack.com')
      .describe(
        "User mode: Slack's web address, where people authorize the app (/oauth/v2/authorize).",
      ),
    SLACK_ATTRIBUTION: z
      .string()
      .trim()
      .min(1)
      .max(200)
      .regex(/^[^\p{Cc}<>&]+$/u, 'expected one line of plain text, without <, > or &')
      .optional()
      .describe(
        'User mode: a line added below every post made for a person, in italics (e.g. "sent by the assistant for them"). Unset: none.',
      ),
    SLACK_READ_CHANNELS: channelList('to read')
      .pipe(z.array(z.string()).min(1, 'name at least one channel to read'))
      .describe(
        'The channels the tools may read (ids or #names, resolved to ids at start and on change). Every other channel is refused before any request.',
      ),
    SLACK_POST_CHANNELS: channelList('to post to')
      .default([])
      .describe(
        'The channels the bot may post to (ids or #names); none by default. Posting also needs write tools enabled (GATEHOUSE_ENABLE_WRITES).',
      ),
    SLACK_ALLOW_DMS: envBoolean
      .default(false)
      .describe(
        'Allow direct messages and group DMs in the lists above (off: refused even if listed).',
      ),
    SLACK_ALLOW_EXTERNAL_POSTS: envBoolean
      .default(false)
      .describe(
        'Allow posting to Slack Connect channels (shared with, or pending for, other organisations).',
      ),
    SLACK_LINK_HOSTS: envList
      .default([])
      .describe(
        'Hosts a post may link to (exact host or .suffix); links to any other host are refused or defanged (SLACK_LINK_POLICY).',
      ),
    SLACK_LINK_POLICY: z
      .enum(['refuse', 'defang'])
      .default('refuse')
      .describe(
        'What happens to a link to a host outside SLACK_LINK_HOSTS: refuse the post, or defang the link (hxxps://host[.]com).',
      ),
    SLACK_ALLOWED_MENTIONS: envList
      .pipe(
        z.array(
          z
            .string()
            .regex(
              /^(?:!here|!channel|!everyone|@[UW][A-Z0-9]{6,12}|!subteam\^S[A-Z0-9]{6,12})$/,
              'expected !here, !channel, !everyone, @U… or !subteam^S…',
            ),
        ),
      )
      .default([])
      .describe(
        'Mentions a post may keep (e.g. !here, @U0123ABCD, !subteam^S0123ABCD); every other <…> sequence is escaped to text.',
      ),
    SLACK_API_URL: upstreamUrl()
      .default('https://slack.com/api/')
      .describe('Web API base URL (tests point it at a loopback fake).'),
    SLACK_REQUEST_TIMEOUT_MS: envInt(500, 120_000)
      .default(10_000)
      .describe('How long one request to Slack may take.'),
    SLACK_PAGE_SIZE: envInt(1, 200)
      .default(50)
      .describe('Default number of messages per page (the model may ask for up to 200).'),
    SLACK_HISTORY_LIMITED: envBoolean
      .default(false)
      .describe(
        "Slack's 2025 limits for non-Marketplace apps: history and thread reads at most 1 per minute and 15 messages per page.",
      ),
    SLACK_DEDUPE_WINDOW_MIN: envInt(1, 1440)
      .default(10)
      .describe(
        'A post repeated within this many minutes returns the earlier message instead of posting twice.',
      ),
    SLACK_CHANNEL_REFRESH_MIN: envInt(1, 1440)
      .default(10)
      .describe('How often channel names are resolved again (renames, new channels).'),
  },
  {
    checks: [credentials, identityCheck],
    // The names other Slack tools and MCP servers read.
    aliases: { SLACK_BOT_TOKEN: ['SLACK_TOKEN', 'SLACK_API_TOKEN', 'SLACK_BOT_USER_OAUTH_TOKEN'] },
  },
);

/** The parsed configuration of the Slack server. */
export type SlackConfig = z.output<typeof SlackConfigSchema>;
