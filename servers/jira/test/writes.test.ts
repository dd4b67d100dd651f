import { unframed } from '@gatehouse/testkit';
import type { JiraFake } from '@gatehouse/testkit/jira';
import { validateAdf } from '@gatehouse/testkit/jira';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TOKEN, connectJira, expectNoSchemaDrift, startFake, text } from './helpers.ts';
import type { JiraHarness } from './helpers.ts';

// The write tools: Markdown in as schema-valid ADF, the create metadata checked before anything
// is sent, transitions by name, writes done once, the allow-list before any request.

let fake: JiraFake;
let h: JiraHarness;
beforeAll(async () => {
  fake = await startFake();
  fake.world.projects.find((p) => p.key === 'WEB')!.required = { Bug: ['priority'] };
  h = await connectJira(fake, { GATEHOUSE_ENABLE_WRITES: 'true' });
});
afterAll(async () => {
  await h?.close();
  expect(fake.adfProblems).toEqual([]);
  expectNoSchemaDrift();
  await fake?.close();
});
const call = (name: string, args: Record<string, unknown>) =>
  h.client.callTool({ name, arguments: args });
/** A Task in OPS with only a summary: the create the once-only tests repeat. */
const task = (summary: string) =>
  call('jira_create_issue', { project: 'OPS', type: 'Task', summary });

describe('jira_create_issue', () => {
  it('creates with Markdown as valid ADF, and reads it back as Markdown (round trip)', async () => {
    const markdown =
      'Steps:\n\n1. open **login**\n2. see `500`\n\nSee [the runbook](https://wiki.acme.example/run).';
    const created = await call('jira_create_issue', {
      project: 'OPS',
      type: 'bug',
      summary: 'Login returns 500',
      description: markdown,
      priority: 'High',
      labels: ['login'],
      assignee: 'Alice Adams',
    });
    const { key, deduplicated } = unframed(created.structuredContent) as {
      key: string;
      deduplicated: boolean;
    };
    expect(key).toMatch(/^OPS-\d+$/);
    expect(deduplicated).toBe(false);
    const stored = fake.issue(key);
    expect(validateAdf(stored.description)).toEqual([]);
    expect(stored).toMatchObject({
      priority: 'High',
      labels: ['login'],
      assignee: '557058:alice',
      issuetype: 'Bug',
    });
    const read = await call('jira_get_issue', { key });
    expect((unframed(read.structuredContent) as { description: string }).description).toContain(
      '**login**',
    );
    expect((unframed(read.structuredContent) as { description: string }).description).toContain(
      '[the runbook](https://wiki.acme.example/run)',
    );
  });

  it('leaves images and non-web links out of what it sends', async () => {
    const created = await call('jira_create_issue', {
      project: 'OPS',
      type: 'Task',
      summary: 'Links',
      description:
        'a ![tracker](https://evil.example/p.png?d=1) and [click](javascript:alert(1)) and [mail](mailto:ops@acme.example)',
    });
    const stored = JSON.stringify(
      fake.issue((unframed(created.structuredContent) as { key: string }).key).description,
    );
    expect(stored).not.toContain('evil.example');
    expect(stored).not.toContain('javascript:');
    expect(stored).toContain('mailto:ops@acme.example');
    expect(stored).toContain('[tracker]');
  });

  it('checks the create metadata first: unknown type, missing required field, disallowed value', async () => {
    const before = fake.world.issues.length;
    expect(
      text(await call('jira_create_issue', { project: 'OPS', type: 'Epic', summary: 'x' })),
    ).toBe('OPS has no issue type "Epic"; use one of: Bug, Task, Sub-task.');
    expect(
      text(await call('jira_create_issue', { project: 'WEB', type: 'Bug', summary: 'x' })),
    ).toBe(
      'Cannot create a Bug in WEB: missing required field(s): priority (Priority). Nothing was created.',
    );
    expect(
      text(
        await call('jira_create_issue', {
          project: 'OPS',
          type: 'Bug',
          summary: 'x',
          priority: 'Urgent',
        }),
      ),
    ).toMatch(/priority must be one of: Highest, High, Medium, Low, Lowest/);
    expect(fake.world.issues.length).toBe(before);
  });

  it('creates once with the property unindexed, as on Jira Cloud: a lost answer and a repeat return the first issue', async () => {
    // The fake, like Jira Cloud, cannot search the gatehouse property by JQL (no app declared
    // an index): the lookup finds the issue by project, reporter and creation time instead.
    const before = fake.world.issues.length;
    fake.fail({ match: 'POST /rest/api/3/issue', status: 504, afterEffect: true });
    const first = await task('Rotate keys');
    expect(unframed(first.structuredContent)).toMatchObject({
      deduplicated: false,
      recovered: true,
    });
    expect(text(first)).toMatch(/^Created once \(Jira's answer was lost; found it\): OPS-\d+/);
    const again = await task('Rotate keys');
    expect(unframed(again.structuredContent)).toMatchObject({
      key: (unframed(first.structuredContent) as { key: string }).key,
      deduplicated: true,
    });
    expect(text(again)).toMatch(
      /^Created once \(an identical request within the dedupe window already did; nothing new sent\): OPS-\d+/,
    );
    expect(fake.world.issues.length).toBe(before + 1);
    expect(fake.queries.some((q) => q.includes('issue.property'))).toBe(false);
  });

  describe("when Jira's search lags behind its writes (as Jira Cloud's does), on two replicas", () => {
    // The fake's search shows a new issue only after searchLagMs, unless the request names it in
    // reconcileIssues — developer.atlassian.com/cloud/jira/platform/search-and-reconcile/. Two
    // servers on one site stand for two replicas behind a load balancer.
    let slow: JiraFake;
    let a: JiraHarness;
    let b: JiraHarness;
    beforeAll(async () => {
      slow = await startFake({ searchLagMs: 600_000 });
      const env = { GATEHOUSE_ENABLE_WRITES: 'true', JIRA_SEARCH_LAG_S: '1' };
      [a, b] = await Promise.all([connectJira(slow, env), connectJira(slow, env)]);
    });
    afterAll(async () => {
      await Promise.all([a?.close(), b?.close()]);
      await slow?.close();
    });
    const create = (on: JiraHarness, summary: string) =>
      on.client.callTool({
        name: 'jira_create_issue',
        arguments: { project: 'OPS', type: 'Task', summary },
      });
    const made = (summary: string) => slow.world.issues.filter((i) => i.summary === summary);
    const pause = (ms: number) => new Promise((r) => setTimeout(r, ms));

    it('a repeat right after a create (its answer lost on the way to the client) returns it once, on any replica', async () => {
      const first = await create(a, 'Drain node 7');
      const again = await create(b, 'Drain node 7');
      expect(unframed(again.structuredContent)).toMatchObject({
        key: (unframed(first.structuredContent) as { key: string }).key,
        deduplicated: true,
      });
      expect(text(again)).toMatch(/^Created once \(an identical request/);
      expect(made('Drain node 7')).toHaveLength(1);
    });

    it('a create Jira did not answer is reported as possibly made; a repeat anywhere is held back until search can tell', async () => {
      slow.fail({ match: 'POST /rest/api/3/issue', status: 504, afterEffect: true });
      const first = await create(a, 'Rotate the signing key');
      expect(first.isError).toBe(true);
      expect(text(first)).toMatch(
        /^Jira gave no answer to the create \(504\), so it is not known whether the issue was made: .*held back until \d{4}-\d\d-\d\dT.*Look for it in OPS first/,
      );
      expect(text(first)).not.toMatch(/try again later/i);
      expect(made('Rotate the signing key')).toHaveLength(1);
      const held = await create(b, 'Rotate the signing key');
      expect(held.isError).toBe(true);
      expect(text(held)).toMatch(/^Not created: an identical create in OPS went out at /);
      expect(b.records.at(-1)?.event).toMatchObject({ outcome: 'failure', reason: 'denied' });
      // The search lookup failing while the create is unsettled holds back too.
      slow.fail({ match: 'POST /rest/api/3/search/jql', status: 503 });
      expect(text(await create(a, 'Rotate the signing key'))).toMatch(/^Not created:/);
      expect(made('Rotate the signing key')).toHaveLength(1);
      // Once search shows the truth and the lag has passed, the repeat returns the first issue.
      slow.settle();
      await pause(1_100);
      const after = await create(b, 'Rotate the signing key');
      expect(unframed(after.structuredContent)).toMatchObject({
        key: made('Rotate the signing key')[0]!.key,
        deduplicated: true,
      });
      expect(made('Rotate the signing key')).toHaveLength(1);
    });

    it('a create Jira never made is made once the lag has passed', async () => {
      slow.fail({ match: 'POST /rest/api/3/issue', status: 504 });
      expect(text(await create(a, 'Renew the CA'))).toMatch(/^Jira gave no answer to the create/);
      expect(text(await create(b, 'Renew the CA'))).toMatch(/^Not created:/);
      expect(made('Renew the CA')).toHaveLength(0);
      await pause(1_100);
      const after = await create(a, 'Renew the CA');
      expect(unframed(after.structuredContent)).toMatchObject({
        deduplicated: false,
        recovered: false,
      });
      expect(made('Renew the CA')).toHaveLength(1);
    });

    it('a create refused by Jira leaves nothing that holds a repeat back', async () => {
      slow.fail({ match: 'POST /rest/api/3/issue', status: 400, message: 'Field x is invalid' });
      expect((await create(a, 'Refused once')).isError).toBe(true);
      const again = await create(b, 'Refused once');
      expect(unframed(again.structuredContent)).toMatchObject({ deduplicated: false });
      expect(made('Refused once')).toHaveLength(1);
    });

    it("keeps the account's record of creates bounded: old entries go, and hold nothing secret", async () => {
      const own = slow.userProperties('557058:bot');
      const old = (Date.now() - 3_600_000).toString(36);
      for (let n = 0; n < 12; n++)
        own.set(`gatehouse.create.${old}.${String(n).padStart(24, '0')}`, { state: 'made' });
      await create(a, 'Prune the journal');
      const names = [...own.keys()];
      expect(names.filter((k) => k.includes(`.${old}.`))).toHaveLength(2);
      const fresh = names.filter((k) => !k.includes(`.${old}.`));
      expect(fresh.length).toBeGreaterThan(0);
      for (const k of fresh) {
        expect(k).toMatch(/^gatehouse\.create\.[0-9a-z]+\.[0-9a-f]{24}$/);
        const value = own.get(k) as Record<string, unknown>;
        expect(['at', 'id', 'project', 'state']).toEqual(
          expect.arrayContaining(Object.keys(value)),
        );
      }
      const key = made('Prune the journal')[0]!;
      expect(fresh.map((k) => own.get(k))).toContainEqual(
        expect.objectContaining({ state: 'made', id: key.id, project: 'OPS' }),
      );
    });

    it('says so when a create can be neither answered nor recorded', async () => {
      slow.fail({ match: 'PUT /rest/api/3/user/properties/*', status: 403 });
      slow.fail({ match: 'POST /rest/api/3/issue', status: 504 });
      const lost = await create(a, 'Unrecorded');
      expect(text(lost)).toMatch(
        /^Jira gave no answer to the create \(504\), so it is not known whether the issue was made, and it could not be recorded for a repeat to find\. Look for it in OPS/,
      );
      expect(a.logs()).toMatch(/could not record a create/);
      expect(a.logs()).not.toContain(TOKEN);
    });
  });

  it('still finds an earlier create through search when the record of creates cannot be read', async () => {
    const first = await task('Journal unreadable');
    fake.settle(); // search shows it; the journal read below fails
    fake.fail({ match: 'GET /rest/api/3/user/properties', status: 503, times: 3 });
    const again = await task('Journal unreadable');
    expect(unframed(again.structuredContent)).toMatchObject({
      key: (unframed(first.structuredContent) as { key: string }).key,
      deduplicated: true,
    });
    expect(h.logs()).toMatch(/could not read the record of creates/);
  });

  it('keys a create on everything it sends: a change of priority or labels is a new issue', async () => {
    const base = { project: 'OPS', type: 'Task', summary: 'Renew the TLS certificate' };
    const a = await call('jira_create_issue', { ...base, priority: 'High' });
    const b = await call('jira_create_issue', { ...base, priority: 'Low', labels: ['tls'] });
    const [ka, kb] = [a, b].map((r) => (unframed(r.structuredContent) as { key: string }).key);
    expect(ka).not.toBe(kb);
    expect(unframed(b.structuredContent)).toMatchObject({ deduplicated: false });
    expect(fake.issue(kb!)).toMatchObject({ priority: 'Low', labels: ['tls'] });
  });

  it('creates anyway when the check for an earlier create fails, and says so', async () => {
    const before = fake.world.issues.length;
    fake.fail({ match: 'POST /rest/api/3/search/jql', status: 400 });
    const created = await task('Check the backups');
    expect(created.isError).toBeFalsy();
    expect(fake.world.issues.length).toBe(before + 1);
    expect(unframed(created.structuredContent)).toMatchObject({
      deduplicated: false,
      unchecked: expect.stringMatching(/Jira answered 400/),
    });
    expect(text(created)).toMatch(
      /^Created without checking for an earlier identical one \(the check failed: .*\); if this was a retry, look for an issue in OPS made twice: OPS-\d+/,
    );
  });

  it('reads every page of the create metadata (Jira pages at 50)', async () => {
    // A project with 60 issue types and 60 custom fields: the type asked for and a required field
    // both sit on the second page.
    const big = await startFake();
    const p = big.world.projects.find((x) => x.key === 'OPS')!;
    p.issueTypes = [
      ...p.issueTypes,
      ...Array.from({ length: 60 }, (_, n) => ({ id: String(20_000 + n), name: `Kind ${n}` })),
    ];
    const hh = await connectJira(big, { GATEHOUSE_ENABLE_WRITES: 'true' });
    try {
      const meta = JSON.stringify(
        await hh.client.readResource({ uri: 'jira://project/OPS/createmeta' }),
      );
      expect(meta).toContain('Kind 59');
      p.customFields = Array.from({ length: 60 }, (_, n) => ({
        id: `customfield_${10_100 + n}`,
        name: `Field ${n}`,
        required: n === 55,
      }));
      const refused = await hh.client.callTool({
        name: 'jira_create_issue',
        arguments: { project: 'OPS', type: 'Kind 57', summary: 'On the second page' },
      });
      expect(text(refused)).toMatch(/missing required field\(s\): customfield_10155 \(Field 55\)/);
      expect(big.requests.some((r) => r.includes('startAt=50'))).toBe(true);
      // A select list of 3 000 options lists 50 and says how many more there are.
      p.issueTypes = p.issueTypes.slice(0, 3);
      p.customFields = [
        {
          id: 'customfield_10300',
          name: 'Component',
          options: Array.from({ length: 3_000 }, (_, n) => `component-${n}`),
        },
      ];
      const listed = unframed(
        JSON.parse(
          (
            (await hh.client.readResource({ uri: 'jira://project/OPS/createmeta' }))
              .contents[0] as {
              text: string;
            }
          ).text,
        ),
      ) as Array<{ fields: Array<{ field: string; allowed?: string[]; allowed_more?: number }> }>;
      const component = listed[0]!.fields.find((f) => f.field === 'customfield_10300')!;
      expect(component.allowed).toHaveLength(50);
      expect(component.allowed![49]).toBe('component-49');
      expect(component.allowed_more).toBe(2_950);
    } finally {
      await hh.close();
      await big.close();
    }
  });

  it('previews with dry_run and sends nothing', async () => {
    const before = fake.requests.filter((r) => r.startsWith('POST /rest/api/3/issue')).length;
    const preview = await call('jira_create_issue', {
      project: 'OPS',
      type: 'Task',
      summary: 'Preview only',
      dry_run: true,
    });
    expect(unframed(preview.structuredContent)).toMatchObject({
      dry_run: true,
      would_send: { fields: { summary: 'Preview only' } },
    });
    expect(fake.requests.filter((r) => r.startsWith('POST /rest/api/3/issue')).length).toBe(before);
  });

  it('refuses a project outside the list before any request', async () => {
    const before = fake.requests.length;
    expect(
      text(await call('jira_create_issue', { project: 'HR', type: 'Task', summary: 'x' })),
    ).toMatch(/is not one of this server's projects/);
    expect(fake.requests.length).toBe(before);
  });
});

describe('jira_update_issue, jira_add_comment, jira_transition_issue', () => {
  it('changes only the fields given', async () => {
    const result = await call('jira_update_issue', {
      key: 'OPS-1',
      priority: 'Low',
      add_labels: ['q4'],
      remove_labels: ['drill'],
      assignee: 'unassigned',
    });
    expect(unframed(result.structuredContent)).toMatchObject({
      key: 'OPS-1',
      changed: ['priority', 'assignee', 'labels'],
    });
    expect(fake.issue('OPS-1')).toMatchObject({
      priority: 'Low',
      labels: ['q4'],
      assignee: null,
      summary: 'Database failover drill',
    });
  });

  it('comments in Markdown, once', async () => {
    const before = fake.issue('OPS-2').comments.length;
    fake.fail({ match: 'POST /rest/api/3/issue/OPS-2/comment', status: 502, afterEffect: true });
    const first = await call('jira_add_comment', {
      key: 'OPS-2',
      body: 'Freed **20 GB**; watching.',
    });
    expect(unframed(first.structuredContent)).toMatchObject({
      deduplicated: false,
      recovered: true,
    });
    expect(fake.issue('OPS-2').comments.length).toBe(before + 1);
    expect(validateAdf(fake.issue('OPS-2').comments.at(-1)!.body)).toEqual([]);
    const again = await call('jira_add_comment', {
      key: 'OPS-2',
      body: 'Freed **20 GB**; watching.',
    });
    expect(unframed(again.structuredContent)).toMatchObject({ deduplicated: true });
    expect(fake.issue('OPS-2').comments.length).toBe(before + 1);
  });

  it('posts the same comment again once the dedupe window has passed (a second day, a second note)', async () => {
    const body = 'Deployed to staging.';
    const first = await call('jira_add_comment', { key: 'OPS-3', body });
    expect(unframed(first.structuredContent)).toMatchObject({ deduplicated: false });
    // Yesterday's note: older than JIRA_DEDUPE_WINDOW_MIN (10 minutes by default).
    fake.issue('OPS-3').comments.at(-1)!.created = new Date(Date.now() - 86_400_000)
      .toISOString()
      .replace('Z', '+0000');
    const second = await call('jira_add_comment', { key: 'OPS-3', body });
    expect(unframed(second.structuredContent)).toMatchObject({ deduplicated: false });
    expect(
      fake
        .issue('OPS-3')
        .comments.filter((c) => JSON.stringify(c.body).includes('Deployed to staging')).length,
    ).toBe(2);
  });

  it('moves an issue by transition or status name, and says when it is already there', async () => {
    expect(
      (await call('jira_transition_issue', { key: 'OPS-1', to: 'start progress' }))
        .structuredContent,
    ).toMatchObject({
      from: 'To Do',
      to: 'In Progress',
      changed: true,
    });
    expect(
      (await call('jira_transition_issue', { key: 'OPS-1', to: 'In Progress' })).structuredContent,
    ).toMatchObject({ changed: false });
    expect(text(await call('jira_transition_issue', { key: 'OPS-1', to: 'Archived' }))).toMatch(
      /has no transition "Archived"; available: To Do → To Do, Done → Done/,
    );
  });

  it('asks for the fields a transition screen requires, and sets the resolution given', async () => {
    const needs = await call('jira_transition_issue', { key: 'WEB-1', to: 'To Do' });
    expect(needs.isError).toBeFalsy();
    expect(text(await call('jira_transition_issue', { key: 'WEB-1', to: 'Done' }))).toBe(
      'The transition "Done" of WEB-1 needs: resolution (Resolution: Done, Won\'t Do, Duplicate). Nothing was changed.',
    );
    expect(
      text(await call('jira_transition_issue', { key: 'WEB-1', to: 'Done', resolution: 'Fixed' })),
    ).toBe("resolution must be one of: Done, Won't Do, Duplicate.");
    expect(fake.issue('WEB-1').status).toBe('To Do');
    const done = await call('jira_transition_issue', {
      key: 'WEB-1',
      to: 'Done',
      resolution: 'duplicate',
    });
    expect(unframed(done.structuredContent)).toMatchObject({ to: 'Done', changed: true });
    expect(fake.issue('WEB-1')).toMatchObject({ status: 'Done', resolution: 'Duplicate' });
  });

  it('refuses an issue whose key moved out of the allowed projects, writing nothing', async () => {
    const moved = fake.move('AND-1', 'HR');
    const result = await call('jira_add_comment', { key: 'AND-1', body: 'hello' });
    expect(text(result)).toMatch(/^AND-1 moved out of this server's projects/);
    expect(text(result)).not.toContain(moved);
    expect(fake.issue(moved).comments).toEqual([]);
  });

  it('says so when the account lacks the permission', async () => {
    const limited = await startFake({ denied: { OPS: ['TRANSITION_ISSUES'] } });
    const hh = await connectJira(limited, { GATEHOUSE_ENABLE_WRITES: 'true' });
    try {
      const result = await hh.client.callTool({
        name: 'jira_transition_issue',
        arguments: { key: 'OPS-1', to: 'Done', resolution: 'Done' },
      });
      expect(text(result)).toBe(
        "The server's Jira account may not transition OPS-1 here (Jira answered 403).",
      );
      expect(hh.records.at(-1)!.policy?.rule).toBe('jira_permission');
    } finally {
      await hh.close();
      await limited.close();
    }
  });
});

describe('the write tools in the 2026 era', () => {
  it('create, update, comment and transition through a modern client', async () => {
    const modern = await connectJira(fake, { GATEHOUSE_ENABLE_WRITES: 'true' }, 'modern');
    try {
      const run = (name: string, args: Record<string, unknown>) =>
        modern.client.callTool({ name, arguments: args });
      const created = await run('jira_create_issue', {
        project: 'WEB',
        type: 'Task',
        summary: 'Modern era create',
        description: '*hello*',
      });
      const { key } = unframed(created.structuredContent) as { key: string };
      expect(key).toMatch(/^WEB-\d+$/);
      expect(
        (await run('jira_update_issue', { key, add_labels: ['modern'] })).structuredContent,
      ).toMatchObject({ changed: ['labels'] });
      expect(
        (await run('jira_add_comment', { key, body: 'from 2026' })).structuredContent,
      ).toMatchObject({ deduplicated: false });
      expect(
        (await run('jira_transition_issue', { key, to: 'Done', resolution: "Won't Do" }))
          .structuredContent,
      ).toMatchObject({ to: 'Done', changed: true });
      expect(fake.issue(key)).toMatchObject({ status: 'Done', labels: ['modern'] });
      expect(fake.issue(key).comments).toHaveLength(1);
    } finally {
      await modern.close();
    }
  });
});
