import { HOSTILE_TEXT, answerProblems, sweepRoads } from '@gatehouse/testkit';
import type { Road } from '@gatehouse/testkit';
import type { SlackFake } from '@gatehouse/testkit/slack';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connectSlack, startFake } from './helpers.ts';
import type { SlackHarness } from './helpers.ts';

// One invariant over every answer of every road, in both views (text only, and with structured
// content), JSON texts decoded: no character that hides text or drives a terminal, and every
// string Slack wrote is inside an untrusted-data frame — or belongs to a closed set checked
// against Slack's documented format (a channel name is [a-z0-9_-]{1,80}). The hostile text sits
// in every field Slack's members write: a channel's name, topic and purpose, a message and a
// reply, a member's real and display names, the workspace's name. Roads found and tested: every
// tool (the post's dry run included), both resources and the listing, every prompt, completions.

const ID = 'C0HOSTILE1';
const THREAD = '1764800000.000100';

const ROADS: Road[] = [
  { kind: 'tool', name: 'slack_list_channels', arguments: {} },
  { kind: 'tool', name: 'slack_list_channels', arguments: { name: 'payload' } },
  { kind: 'tool', name: 'slack_read_channel', arguments: { channel: ID } },
  { kind: 'tool', name: 'slack_read_thread', arguments: { channel: ID, thread_ts: THREAD } },
  {
    kind: 'tool',
    name: 'slack_post_message',
    arguments: { channel: ID, text: 'Status update', dry_run: true },
  },
  { kind: 'resource', uri: 'slack://channels' },
  { kind: 'resource', uri: `slack://channel/${ID}` },
  { kind: 'resources', name: 'resources/list' },
  { kind: 'prompt', name: 'slack_summarise', arguments: { channel: ID } },
  { kind: 'prompt', name: 'slack_summarise', arguments: { channel: ID, thread_ts: THREAD } },
  { kind: 'prompt', name: 'slack_incident_update', arguments: { channel: ID, incident: 'x' } },
  { kind: 'prompt', name: 'slack_draft_announcement', arguments: { channel: ID, topic: 'x' } },
];

let fake: SlackFake;
const views: Array<[string, SlackHarness]> = [];

beforeAll(async () => {
  fake = await startFake();
  const { world } = fake;
  world.team.name = HOSTILE_TEXT;
  world.users.push({
    id: 'U0HOSTILE1',
    name: 'mallory2',
    real_name: HOSTILE_TEXT,
    display_name: HOSTILE_TEXT,
  });
  world.channels.push({
    id: ID,
    name: `${HOSTILE_TEXT} #general`,
    topic: HOSTILE_TEXT,
    purpose: HOSTILE_TEXT,
    members: [world.bot.user_id, 'U0HOSTILE1'],
    messages: [
      {
        ts: THREAD,
        user: 'U0HOSTILE1',
        text: `${HOSTILE_TEXT} <@U0HOSTILE1> in <#${ID}>`,
        replies: [
          { ts: '1764800001.000100', user: 'U0HOSTILE1', text: HOSTILE_TEXT, thread_ts: THREAD },
        ],
      },
    ],
  });
  const env = {
    SLACK_READ_CHANNELS: `${ID},#general`,
    SLACK_POST_CHANNELS: ID,
    GATEHOUSE_ENABLE_WRITES: 'true',
  };
  views.push(['text', await connectSlack(fake, { ...env, GATEHOUSE_STRUCTURED_OUTPUT: 'false' })]);
  views.push([
    'structured',
    await connectSlack(fake, { ...env, GATEHOUSE_STRUCTURED_OUTPUT: 'true' }),
  ]);
});

afterAll(async () => {
  for (const [, h] of views) await h.close();
  await fake?.close();
});

describe('every answer of every road, in both views', () => {
  it('holds no hiding character and no Slack text outside a frame', async () => {
    const { problems, arrived } = await sweepRoads(views, ROADS);
    for (const [view, h] of views) {
      const completed = await h.client.complete({
        ref: { type: 'ref/prompt', name: 'slack_summarise' },
        argument: { name: 'channel', value: '' },
      });
      problems.push(...answerProblems(completed).map((p) => `${view} completion ${p}`));
    }
    expect(problems).toEqual([]);
    // The hostile text reached the model on most roads: the oracle had something to look at.
    expect(arrived).toBeGreaterThan(ROADS.length);
  });
});
