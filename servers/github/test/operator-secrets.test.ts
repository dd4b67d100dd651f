import { unframed } from '@gatehouse/testkit';
import type { GitHubFake } from '@gatehouse/testkit/github';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connectGitHub, startFake, text } from './helpers.ts';

// The operator's own secret list (GATEHOUSE_SECRET_VALUES): two worlds over one fake GitHub that
// differ only in the list. Without it an issue body carries the value out and back; with it the
// value is redacted from what is read and a write that carries it is refused before GitHub.

const SECRET = 'prod-db-Pa55word-8841';
let fake: GitHubFake;
beforeAll(async () => {
  fake = await startFake();
});
afterAll(async () => {
  await fake?.close();
});

describe("the operator's secret list on the GitHub server", () => {
  it('redacts a listed value from what is read and refuses a write that carries it', async () => {
    const control = await connectGitHub(fake, { GATEHOUSE_ENABLE_WRITES: 'true' });
    const created = await control.client.callTool({
      name: 'github_create_issue',
      arguments: { repo: 'acme/web', title: 'Rotate the DB password', body: `old: ${SECRET}` },
    });
    const { number } = (unframed(created.structuredContent) as { issue: { number: number } }).issue;
    const readInControl = await control.client.callTool({
      name: 'github_get_issue',
      arguments: { repo: 'acme/web', number },
    });
    expect(text(readInControl)).toContain(SECRET); // the oracle can fail
    await control.close();

    const guarded = await connectGitHub(fake, {
      GATEHOUSE_ENABLE_WRITES: 'true',
      GATEHOUSE_SECRET_VALUES: `# listed by the operator\n${SECRET}\n`,
    });
    const read = await guarded.client.callTool({
      name: 'github_get_issue',
      arguments: { repo: 'acme/web', number },
    });
    expect(text(read)).toContain('old: [REDACTED:GATEHOUSE_SECRET_VALUES]');
    const issuesBefore = fake.requests.filter((r) => r.startsWith('POST ')).length;
    const write = await guarded.client.callTool({
      name: 'github_add_comment',
      arguments: { repo: 'acme/web', number, body: `new one is ${SECRET}x` },
    });
    expect(write.isError).toBe(true);
    expect(text(write)).toMatch(/secret/i);
    expect(fake.requests.filter((r) => r.startsWith('POST ')).length).toBe(issuesBefore);
    const everything = JSON.stringify([read, write, guarded.records]) + guarded.logs();
    expect(everything).not.toContain(SECRET);
    await guarded.close();
  });
});
