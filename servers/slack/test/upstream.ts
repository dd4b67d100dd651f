import type { ServerUpstream } from '@gatehouse/testkit';
import { slackSeed, startSlackFake } from '@gatehouse/testkit/slack';

/** The Slack fake with the seed workspace, and the channel list read through it. */
export async function upstream(): Promise<ServerUpstream> {
  const token = 'xoxb-1111111111-2222222222222-UPSTREAMtestTOKEN000';
  const fake = await startSlackFake({
    world: slackSeed(),
    tokens: { [token]: { scopes: ['channels:read', 'channels:history', 'users:read'] } },
  });
  return {
    env: { SLACK_BOT_TOKEN: token, SLACK_API_URL: fake.url, SLACK_READ_CHANNELS: '#general' },
    call: { name: 'slack_list_channels', arguments: {} },
    expect: 'general',
    rejected: {
      variable: 'SLACK_BOT_TOKEN',
      value: 'xoxb-9999999999-REJECTEDREJECTEDREJECTED',
      said: 'Slack rejected the bot token',
    },
    close: () => fake.close(),
  };
}
