import { HOSTILE_TEXT, hostileProblems, resultText, unframed } from '@gatehouse/testkit';
import type { JiraFake } from '@gatehouse/testkit/jira';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connectJira, startFake } from './helpers.ts';
import type { JiraHarness } from './helpers.ts';

// Every road Jira's content takes to the model, in the default text view (structured output
// off, as a user runs it): search, get, the prompts that embed issues. One hostile text in a
// summary, a description and a comment; every answer must hold the invariant.

let fake: JiraFake;
let h: JiraHarness;
beforeAll(async () => {
  fake = await startFake();
  const issue = fake.issue('OPS-2');
  issue.summary = HOSTILE_TEXT;
  issue.description = {
    type: 'doc',
    version: 1,
    content: [{ type: 'paragraph', content: [{ type: 'text', text: HOSTILE_TEXT }] }],
  };
  issue.comments.push({
    id: '90001',
    author: '557058:bob',
    body: {
      type: 'doc',
      version: 1,
      content: [{ type: 'paragraph', content: [{ type: 'text', text: HOSTILE_TEXT }] }],
    },
    created: new Date().toISOString().replace('Z', '+0000'),
  });
  h = await connectJira(fake, { GATEHOUSE_STRUCTURED_OUTPUT: 'false' });
});
afterAll(async () => {
  await h?.close();
  await fake?.close();
});

describe('the default text view of every read road', () => {
  it.each([
    ['jira_search_issues', { project: 'OPS' }],
    ['jira_get_issue', { key: 'OPS-2' }],
  ])('tool %s', async (name, args) => {
    const result = await h.client.callTool({ name, arguments: args });
    expect(unframed(result.structuredContent)).toBeUndefined();
    expect(hostileProblems(resultText(result))).toEqual([]);
  });

  it.each([
    ['jira_triage_issue', { key: 'OPS-2' }],
    ['jira_summarise', { project: 'OPS' }],
  ])('prompt %s', async (name, args) => {
    const prompt = await h.client.getPrompt({ name, arguments: args });
    const text = prompt.messages.map((m) => (m.content as { text?: string }).text ?? '').join('\n');
    expect(hostileProblems(text)).toEqual([]);
  });

  it('the resources carry no issue text, and hide nothing either', async () => {
    for (const uri of [
      'jira://projects',
      'jira://project/OPS/createmeta',
      'jira://project/OPS/statuses',
    ]) {
      const read = await h.client.readResource({ uri });
      const text = read.contents.map((c) => ('text' in c ? String(c.text) : '')).join('\n');
      expect(hostileProblems(text, false)).toEqual([]);
    }
  });
});
