import { PolicyError, ToolError, UpstreamError, defineTool } from '@gatehouse/core';
import { ambiguous, dedupeKey, postOnce, sleep } from '@gatehouse/core/saas';
import * as z from 'zod';
import { jiraError } from '../client.js';
import type { CallBounds } from '../client.js';
import type { JiraCall, JiraDeps } from '../deps.js';
import { allowedProject } from '../format.js';
import { markdownToAdf } from '../markdown.js';
import { accountIdOf } from '../people.js';
import { DEDUPE_PROPERTY, JIRA_WRITE, checkCreate, findCreated, writeCall } from '../writes.js';
import { PersonArg, PriorityArg, writeSaid } from './write-common.js';

/** `jira_create_issue` (write): checked against the create metadata, created once. */
export function createIssueTool(deps: JiraDeps) {
  const { scope, config } = deps;
  return defineTool({
    name: 'jira_create_issue',
    title: 'Create an issue',
    description: `Create an issue. The description is Markdown (images and non-web links are left out). Required fields and allowed values are checked before anything is sent (the project's createmeta resource lists them). Repeating the same create returns the first issue.`,
    access: 'write',
    annotations: JIRA_WRITE,
    auditArgs: 'redacted',
    input: z.strictObject({
      project: z.string().min(2).max(20).describe('Project key.'),
      type: z.string().min(1).max(60).describe('Issue type name (Bug, Task…).'),
      summary: z.string().trim().min(1).max(255).describe('One line.'),
      description: z.string().max(32_000).optional().describe('Markdown.'),
      priority: PriorityArg,
      labels: z
        .array(z.string().min(1).max(100).regex(/^\S+$/, 'labels have no spaces'))
        .max(10)
        .optional()
        .describe('Labels (no spaces).'),
      assignee: PersonArg.describe('A name, e-mail or "me".'),
    }),
    output: z.object({
      key: z.string(),
      url: z.string(),
      deduplicated: z.boolean().describe('An identical create in the dedupe window made it'),
      recovered: z.boolean().describe("Jira's answer was lost; the issue was found"),
      unchecked: z
        .string()
        .optional()
        .describe('Why the check for an earlier identical create failed (it was created anyway)'),
    }),
    target: (args) => scope.target(args.project.trim().toUpperCase()),
    async handler(args, ctx) {
      const call = await deps.accounts.deps(deps, ctx);
      const project = allowedProject(scope, args.project);
      const fields: Record<string, unknown> = {
        project: { key: project },
        summary: args.summary,
        ...(args.description === undefined ? {} : { description: markdownToAdf(args.description) }),
        ...(args.priority === undefined ? {} : { priority: { name: args.priority } }),
        ...(args.labels === undefined ? {} : { labels: args.labels }),
      };
      if (args.assignee !== undefined)
        fields.assignee = {
          accountId: await accountIdOf(call.jira, ctx, args.assignee, 'assignee', [project]),
        };
      fields.issuetype = { id: await checkCreate(call.jira, ctx, project, args.type, fields) };
      // The key covers everything sent (the resolved assignee and type too), by whom.
      const key = dedupeKey({ who: ctx.principal.id, fields });
      const request = {
        fields,
        properties: [{ key: DEDUPE_PROPERTY, value: { key, audit_event: ctx.eventId } }],
      };
      if (ctx.dryRun)
        return ctx.preview(request, `Would create a ${args.type} in ${project}: ${args.summary}`);
      const outcome = await createOnce(call, ctx, project, key, () =>
        writeCall(call, ctx, `create issues in ${project}`, (api) =>
          api.issues.createIssue(request),
        ),
      );
      const { value, deduplicated, recovered } = outcome;
      const url = `${config.JIRA_URL.replace(/\/$/, '')}/browse/${value}`;
      return {
        structured: {
          key: value,
          url,
          deduplicated,
          recovered,
          ...(outcome.unchecked === undefined ? {} : { unchecked: outcome.unchecked }),
        },
        text: `${writeSaid(outcome, 'created', `an issue in ${project}`)} ${value}: ${url}`,
      };
    },
  });
}

/**
 * Looks after a create that got no answer: at once, then after 1, 2 and 4 s more (search shows
 * most writes within seconds), always ending before JIRA_SEARCH_LAG_S has passed.
 */
const RECOVERY_WAITS_MS = [0, 1_000, 2_000, 4_000];

/**
 * A create sent at most once (ADR 0012). An identical create in the window is returned: found
 * through the journal (the account's own records, read directly) and search. A create that went
 * out without an answer — recorded `sending` in the journal — holds back an identical one until
 * JIRA_SEARCH_LAG_S has passed, when search can tell; a create that gets no answer is looked for
 * for a few seconds and, when not found, reported as possibly made, never as one to retry.
 */
async function createOnce(
  deps: JiraCall,
  ctx: CallBounds,
  project: string,
  key: string,
  create: () => Promise<{ id?: string; key?: string }>,
) {
  const { jira, config, journal, logger } = deps;
  const lagMs = config.JIRA_SEARCH_LAG_S * 1000;
  const search = (ids: readonly string[]) =>
    findCreated(jira, ctx, project, key, config.JIRA_DEDUPE_WINDOW_MIN, ids.map(Number));
  const held = (sent: number) =>
    `an identical create in ${project} went out at ${new Date(sent).toISOString()} and its answer never came back (lost, or still on its way); it may have made the issue, and Jira's search can take a while to show it, so this one is held back until ${new Date(sent + lagMs).toISOString()} (JIRA_SEARCH_LAG_S). Look for it in ${project} first; after that time a repeat is created or returned once.`;
  const warn = (what: string) => (error: unknown) => {
    const mapped = jiraError(error);
    logger.warn(
      { err: mapped instanceof UpstreamError ? mapped.toolMessage() : mapped.message },
      `Jira: could not ${what}`,
    );
    return undefined;
  };
  let record: string | undefined;
  let sent: number | undefined;
  let unanswered = false;
  try {
    return await postOnce(
      ctx.signal,
      async () => {
        // An unreadable journal leaves search to decide (said in the log), never skips it.
        const entry = await journal.entry(ctx, key).catch(warn('read the record of creates'));
        const unsettled = entry?.state === 'sending' && Date.now() < entry.at + lagMs;
        // A failed search while a create is unsettled holds back too (never posts past it).
        const found = await search(entry?.id === undefined ? [] : [entry.id]).catch(
          (error: unknown) => {
            if (!unsettled) throw error;
            return undefined;
          },
        );
        if (found === undefined && unsettled)
          throw new PolicyError('jira_create_unsettled', `Not created: ${held(entry.at)}`);
        return found;
      },
      async () => {
        record = await journal.sending(ctx, key, project).catch(warn('record a create'));
        sent = Date.now();
        try {
          const created = await create();
          if (record !== undefined)
            await journal
              .made(ctx, record, {
                state: 'made',
                at: sent,
                project,
                ...(created.id === undefined ? {} : { id: created.id }),
              })
              .catch(warn('record a create'));
          return created.key ?? '';
        } catch (error) {
          if (ambiguous(error)) unanswered = true;
          else if (record !== undefined)
            await journal.forget(ctx, record).catch(warn('forget a refused create'));
          throw error;
        }
      },
      {
        mapError: jiraError,
        onLookupFailure: 'post',
        recover: async () => {
          let waited = 0;
          for (const wait of RECOVERY_WAITS_MS) {
            // Only within the lag: after it, an identical create is no longer held back.
            if ((waited += wait) > 0 && waited >= lagMs) break;
            await sleep(wait, ctx.signal);
            const found = await search([]).catch(() => undefined);
            if (found !== undefined) return found;
          }
          return undefined;
        },
      },
    );
  } catch (error) {
    if (!unanswered || sent === undefined || error instanceof PolicyError) throw error;
    const mapped = jiraError(error);
    if (!(mapped instanceof UpstreamError)) throw error;
    const status = mapped.status;
    if (record === undefined)
      throw new ToolError(
        `Jira gave no answer to the create (${status}), so it is not known whether the issue was made, and it could not be recorded for a repeat to find. Look for it in ${project} before creating it again: Jira's search can take a while to show it.`,
        { code: 'jira_create_unknown', cause: error },
      );
    if (Date.now() >= sent + lagMs) throw error;
    throw new ToolError(
      `Jira gave no answer to the create (${status}), so it is not known whether the issue was made: ${held(sent)}`,
      { code: 'jira_create_unknown', cause: error },
    );
  }
}
