import { unframed } from '@gatehouse/testkit';
import type { JiraFake } from '@gatehouse/testkit/jira';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connectJira, startFake, text } from './helpers.ts';

// The operator's own secret list (GATEHOUSE_SECRET_VALUES): two worlds over one fake Jira that
// differ only in the list. Without it an issue carries the value out and back; with it the value
// is redacted from what is read and a write that carries it is refused before Jira.

const SECRET = 'smtp-relay-Passw0rd-77';
let fake: JiraFake;
beforeAll(async () => {
  fake = await startFake();
});
afterAll(async () => {
  await fake?.close();
});

describe("the operator's secret list on the Jira server", () => {
  it('redacts a listed value from what is read and refuses a write that carries it', async () => {
    const control = await connectJira(fake, { GATEHOUSE_ENABLE_WRITES: 'true' });
    const created = await control.client.callTool({
      name: 'jira_create_issue',
      arguments: {
        project: 'OPS',
        type: 'task',
        summary: 'Rotate the relay password',
        description: `The old one is ${SECRET}.`,
      },
    });
    const { key } = unframed(created.structuredContent) as { key: string };
    const readInControl = await control.client.callTool({
      name: 'jira_get_issue',
      arguments: { key },
    });
    expect(text(readInControl)).toContain(SECRET); // the oracle can fail
    await control.close();

    const guarded = await connectJira(fake, {
      GATEHOUSE_ENABLE_WRITES: 'true',
      GATEHOUSE_SECRET_VALUES: SECRET,
    });
    const read = await guarded.client.callTool({ name: 'jira_get_issue', arguments: { key } });
    expect(text(read)).toContain('The old one is [REDACTED:GATEHOUSE_SECRET_VALUES].');
    const requests = fake.requests.length;
    const write = await guarded.client.callTool({
      name: 'jira_add_comment',
      arguments: { key, body: `still ${SECRET}` },
    });
    expect(write.isError).toBe(true);
    expect(text(write)).toMatch(/secret/i);
    expect(fake.requests.slice(requests).filter((r) => r.startsWith('POST'))).toEqual([]);
    const everything = JSON.stringify([read, write, guarded.records]) + guarded.logs();
    expect(everything).not.toContain(SECRET);
    await guarded.close();
  });
});
