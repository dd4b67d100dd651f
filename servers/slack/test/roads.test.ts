import { HOSTILE_TEXT, hostileProblems, resultText, unframed } from '@gatehouse/testkit';
import type { SlackFake } from '@gatehouse/testkit/slack';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connectSlack, startFake } from './helpers.ts';
import type { SlackHarness } from './helpers.ts';

// Every road Slack's content takes to the model, in the default text view (structured output
// off, as a user runs it): the list and read tools, the resources, the prompts. One hostile text
// in a message, a thread reply and a channel topic; every answer must hold the invariant.

let fake: SlackFake;
let h: SlackHarness;
beforeAll(async () => {
  fake = await startFake();
  const incidents = fake.channel('#incidents');
  incidents.topic = HOSTILE_TEXT;
  incidents.messages.push({
    ts: '1764700000.000100',
    user: 'U0MALLORY1',
    text: HOSTILE_TEXT,
    replies: [
      {
        ts: '1764700001.000100',
        user: 'U0MALLORY1',
        text: HOSTILE_TEXT,
        thread_ts: '1764700000.000100',
      },
    ],
  });
  h = await connectSlack(fake, { GATEHOUSE_STRUCTURED_OUTPUT: 'false' });
});
afterAll(async () => {
  await h?.close();
  await fake?.close();
});

describe('the default text view of every read road', () => {
  it.each([
    ['slack_list_channels', {}],
    ['slack_read_channel', { channel: '#incidents' }],
    ['slack_read_thread', { channel: '#incidents', thread_ts: '1764700000.000100' }],
  ])('tool %s', async (name, args) => {
    const result = await h.client.callTool({ name, arguments: args });
    expect(unframed(result.structuredContent)).toBeUndefined();
    expect(hostileProblems(resultText(result))).toEqual([]);
  });

  it.each(['slack://channels', 'slack://channel/C0INCIDENT'])('resource %s', async (uri) => {
    const read = await h.client.readResource({ uri });
    const text = read.contents.map((c) => ('text' in c ? String(c.text) : '')).join('\n');
    expect(hostileProblems(text)).toEqual([]);
  });

  it.each([
    ['slack_summarise', { channel: '#incidents' }],
    ['slack_incident_update', { channel: '#incidents', incident: 'API errors' }],
  ])('prompt %s', async (name, args) => {
    const prompt = await h.client.getPrompt({ name, arguments: args });
    const text = prompt.messages.map((m) => (m.content as { text?: string }).text ?? '').join('\n');
    expect(hostileProblems(text)).toEqual([]);
  });
});
