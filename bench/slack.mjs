// The Slack server against @modelcontextprotocol/server-slack@2025.4.25 (the reference, over
// stdio), both pointed at the same loopback fake of the Slack Web API (see bench/README.md).
//   node bench/slack.mjs   (after a build; `npm run bench -- slack` builds first)
// Knobs: BENCH_COLD (spawns per server, default 10), BENCH_CALLS (calls per tool, default 200).
import { fileURLToPath } from 'node:url';
import { connectStdio } from '@gatehouse/testkit';
import { slackSeed, startSlackFake } from '@gatehouse/testkit/slack';
import { BENCH_ENV, bytesLine, compareOverStdio, reportComparison } from './servers.mjs';

const COLD = Number(process.env.BENCH_COLD ?? 10);
const CALLS = Number(process.env.BENCH_CALLS ?? 200);
const MESSAGES = 50;
const TOKEN = 'xoxb-1111111111-2222222222222-BENCHbenchBENCHbench00';
const OURS = fileURLToPath(new URL('../servers/slack/dist/index.js', import.meta.url));
const REDIRECT = fileURLToPath(new URL('./slack-redirect.mjs', import.meta.url));
const REFERENCE = fileURLToPath(
  import.meta.resolve('@modelcontextprotocol/server-slack/dist/index.js'),
);

// The seed workspace plus #bench: 60 messages by five people, with threads, links and mentions.
const world = slackSeed();
const people = world.users.filter((u) => !u.is_bot).map((u) => u.id);
const base = Math.floor(Date.now() / 1000) - 86_400;
world.channels.push({
  id: 'C0BENCH001',
  name: 'bench',
  topic: 'Benchmark traffic',
  members: [world.bot.user_id, ...people],
  messages: Array.from({ length: 60 }, (_, i) => ({
    ts: `${base + i * 60}.000100`,
    user: people[i % people.length],
    text: `Message ${i}: the deploy of <https://ci.acme.example/run/${i}|run ${i}> ${i % 3 === 0 ? `needs <@${people[(i + 1) % people.length]}>` : 'passed'}; see the dashboard for latency and error rates over the last hour.`,
    ...(i % 10 === 0
      ? {
          replies: [
            {
              ts: `${base + i * 60 + 1}.000100`,
              user: people[0],
              text: 'ack',
              thread_ts: `${base + i * 60}.000100`,
            },
          ],
        }
      : {}),
  })),
});
const fake = await startSlackFake({
  world,
  tokens: {
    [TOKEN]: { scopes: ['channels:read', 'channels:history', 'users:read', 'chat:write'] },
  },
});

const servers = {
  gatehouse: {
    connect: () =>
      connectStdio(process.execPath, [OURS], {
        env: {
          PATH: process.env.PATH ?? '',
          SLACK_BOT_TOKEN: TOKEN,
          SLACK_API_URL: fake.url,
          SLACK_READ_CHANNELS: '#bench,#general,#incidents',
          ...BENCH_ENV,
        },
        stderr: 'ignore',
      }),
    list: (c) => c.callTool({ name: 'slack_list_channels', arguments: {} }),
    history: (c) =>
      c.callTool({ name: 'slack_read_channel', arguments: { channel: '#bench', limit: MESSAGES } }),
  },
  reference: {
    connect: () =>
      connectStdio(process.execPath, ['--import', REDIRECT, REFERENCE], {
        env: {
          PATH: process.env.PATH ?? '',
          SLACK_BOT_TOKEN: TOKEN,
          SLACK_TEAM_ID: world.team.id,
          SLACK_CHANNEL_IDS: 'C0BENCH001,C0GENERAL1,C0INCIDENT',
          GATEHOUSE_BENCH_SLACK_URL: fake.url,
        },
        stderr: 'ignore',
      }),
    list: (c) => c.callTool({ name: 'slack_list_channels', arguments: { limit: 100 } }),
    history: (c) =>
      c.callTool({
        name: 'slack_get_channel_history',
        arguments: { channel_id: 'C0BENCH001', limit: MESSAGES },
      }),
  },
};
const check = (result, name) => {
  const body = result.content.map((c) => c.text ?? '').join('\n');
  if (result.isError || body.includes('"ok":false'))
    throw new Error(`${name}: ${body.slice(0, 300)}`);
  return result;
};

const result = await compareOverStdio({
  servers,
  first: 'list',
  calls: ['list', 'history'],
  cold: COLD,
  warm: CALLS,
  check,
});
await fake.close();

reportComparison('slack', 'Slack server benchmark', result, {
  first: 'list-channels',
  labels: { list: 'list channels', history: `read ${MESSAGES} messages` },
  extra: [bytesLine(result.sizes, 'history', `${MESSAGES} messages`)],
});
