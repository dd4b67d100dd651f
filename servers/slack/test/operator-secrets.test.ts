import type { SlackFake } from '@gatehouse/testkit/slack';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { callsDuring, connectSlack, startFake, text } from './helpers.ts';

// The operator's own secret list (GATEHOUSE_SECRET_VALUES): two worlds over one fake Slack that
// differ only in the list. Without it a message carries the value out and back; with it the
// value is redacted from what is read and a post that carries it is refused before Slack.

const SECRET = 'vault-root-Token-5512';
let fake: SlackFake;
beforeAll(async () => {
  fake = await startFake();
});
afterAll(async () => {
  await fake?.close();
});

describe("the operator's secret list on the Slack server", () => {
  it('redacts a listed value from what is read and refuses a post that carries it', async () => {
    const control = await connectSlack(fake, { GATEHOUSE_ENABLE_WRITES: 'true' });
    const posted = await control.client.callTool({
      name: 'slack_post_message',
      arguments: { channel: '#incidents', text: `unseal with ${SECRET}` },
    });
    expect(posted.isError).toBeFalsy();
    const readInControl = await control.client.callTool({
      name: 'slack_read_channel',
      arguments: { channel: '#incidents' },
    });
    expect(text(readInControl)).toContain(SECRET); // the oracle can fail
    await control.close();

    const guarded = await connectSlack(fake, {
      GATEHOUSE_ENABLE_WRITES: 'true',
      GATEHOUSE_SECRET_VALUES: SECRET,
    });
    const read = await guarded.client.callTool({
      name: 'slack_read_channel',
      arguments: { channel: '#incidents' },
    });
    expect(text(read)).toContain('unseal with [REDACTED:GATEHOUSE_SECRET_VALUES]');
    let write: unknown;
    const calls = await callsDuring(fake, async () => {
      write = await guarded.client.callTool({
        name: 'slack_post_message',
        arguments: { channel: '#incidents', text: `again: ${SECRET}` },
      });
    });
    expect((write as { isError?: boolean }).isError).toBe(true);
    expect(text(write)).toMatch(/secret/i);
    expect(calls).not.toContain('chat.postMessage');
    const everything = JSON.stringify([read, write, guarded.records]) + guarded.logs();
    expect(everything).not.toContain(SECRET);
    await guarded.close();
  });
});
