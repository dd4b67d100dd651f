import { PolicyError, ToolError, defineTool } from '@gatehouse/core';
import { ambiguous, dedupeKey, postOnce, sleep } from '@gatehouse/core/saas';
import * as z from 'zod';
import { jiraError } from '../client.js';
import type { CallBounds } from '../client.js';
import type { JiraDeps } from '../deps.js';
import { allowedProject, issueView } from '../format.js';
import { keyTarget } from '../format.js';
import { markdownToAdf } from '../markdown.js';
import { accountIdOf } from '../people.js';
import {
  DEDUPE_PROPERTY,
  JIRA_WRITE,
  checkCreate,
  findComment,
  findCreated,
  writeCall,
  writableIssue,
} from '../writes.js';

const KeyArg = z.string().min(3).max(32).describe('The issue key, e.g. OPS-12.');
const PriorityArg = z
  .string()
  .min(1)
  .max(60)
  .optional()
  .describe('Priority name (Highest, High, Medium, Low, Lowest).');
const PersonArg = z.string().min(1).max(120).optional();

/** `jira_create_issue` (write): checked against the create metadata, created once. */
export function createIssueTool(deps: JiraDeps) {
  const { scope, jira, config } = deps;
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
          accountId: await accountIdOf(jira, ctx, args.assignee, 'assignee', [project]),
        };
      fields.issuetype = { id: await checkCreate(jira, ctx, project, args.type, fields) };
      // The key covers everything sent (the resolved assignee and type too), by whom.
      const key = dedupeKey({ who: ctx.principal.id, fields });
      const request = {
        fields,
        properties: [{ key: DEDUPE_PROPERTY, value: { key, audit_event: ctx.eventId } }],
      };
      if (ctx.dryRun)
        return ctx.preview(request, `Would create a ${args.type} in ${project}: ${args.summary}`);
      const outcome = await createOnce(deps, ctx, project, key, () =>
        writeCall(deps, ctx, `create issues in ${project}`, (api) =>
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
  deps: JiraDeps,
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
    logger.warn({ err: jiraError(error).toolMessage() }, `Jira: could not ${what}`);
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
    const status = jiraError(error).status;
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

/**
 * What a once-only write did, in words: done; done once, its answer lost and found again;
 * already done by an identical write in the window (nothing new sent); or done without the
 * check for an earlier one, which failed — so a retry may have made a duplicate.
 */
function writeSaid(
  outcome: { deduplicated: boolean; recovered: boolean; unchecked?: string },
  verb: string,
  what: string,
): string {
  const done = `${verb[0]!.toUpperCase()}${verb.slice(1)}`;
  if (outcome.deduplicated)
    return `${done} once (an identical request within the dedupe window already did; nothing new sent):`;
  if (outcome.recovered) return `${done} once (Jira's answer was lost; found it):`;
  if (outcome.unchecked !== undefined)
    return `${done} without checking for an earlier identical one (the check failed: ${outcome.unchecked}); if this was a retry, look for ${what} made twice:`;
  return `${done}`;
}

/** `jira_update_issue` (write): only the fields given change. */
export function updateIssueTool(deps: JiraDeps) {
  const { scope, jira, config } = deps;
  return defineTool({
    name: 'jira_update_issue',
    title: 'Update an issue',
    description: 'Change an issue; only the fields given change.',
    access: 'write',
    annotations: { ...JIRA_WRITE, idempotentHint: true },
    auditArgs: 'redacted',
    input: z.strictObject({
      key: KeyArg,
      summary: z.string().trim().min(1).max(255).optional().describe('The new summary.'),
      description: z
        .string()
        .max(32_000)
        .optional()
        .describe('Replaces the description (Markdown).'),
      priority: PriorityArg,
      add_labels: z
        .array(z.string().min(1).max(100).regex(/^\S+$/))
        .max(10)
        .optional()
        .describe('Labels to add.'),
      remove_labels: z
        .array(z.string().min(1).max(100))
        .max(10)
        .optional()
        .describe('Labels to remove.'),
      assignee: PersonArg.describe('A name, e-mail, "me" or "unassigned".'),
    }),
    output: z.object({ key: z.string(), changed: z.array(z.string()), url: z.string() }),
    target: (args) => keyTarget(scope, args.key),
    async handler(args, ctx) {
      const issue = await writableIssue(deps, ctx, args.key);
      const key = issue.key ?? args.key;
      const fields: Record<string, unknown> = {
        ...(args.summary === undefined ? {} : { summary: args.summary }),
        ...(args.description === undefined ? {} : { description: markdownToAdf(args.description) }),
        ...(args.priority === undefined ? {} : { priority: { name: args.priority } }),
      };
      if (args.assignee !== undefined)
        fields.assignee = {
          accountId: await accountIdOf(jira, ctx, args.assignee, 'assignee', [key.split('-')[0]!]),
        };
      const labels = [
        ...(args.add_labels ?? []).map((l) => ({ add: l })),
        ...(args.remove_labels ?? []).map((l) => ({ remove: l })),
      ];
      const changed = [...Object.keys(fields), ...(labels.length === 0 ? [] : ['labels'])];
      if (changed.length === 0)
        throw new ToolError('Nothing to change: give at least one field.', { code: 'no_change' });
      const request = {
        issueIdOrKey: key,
        fields,
        ...(labels.length === 0 ? {} : { update: { labels } }),
      };
      if (ctx.dryRun) return ctx.preview(request, `Would change ${changed.join(', ')} of ${key}.`);
      await writeCall(deps, ctx, `edit ${key}`, (api) => api.issues.editIssue(request));
      const url = issueView(config.JIRA_URL, issue).url;
      return {
        structured: { key, changed, url },
        text: `Updated ${changed.join(', ')} of ${key}: ${url}`,
      };
    },
  });
}

/** `jira_add_comment` (write): Markdown as ADF, posted once. */
export function addCommentTool(deps: JiraDeps) {
  const { scope, jira, config } = deps;
  return defineTool({
    name: 'jira_add_comment',
    title: 'Comment on an issue',
    description:
      'Add a Markdown comment (images and non-web links are left out). Repeating the same comment returns the first one.',
    access: 'write',
    annotations: JIRA_WRITE,
    auditArgs: 'redacted',
    input: z.strictObject({
      key: KeyArg,
      body: z.string().min(1).max(32_000).describe('Markdown.'),
    }),
    output: z.object({
      key: z.string(),
      comment_id: z.string(),
      deduplicated: z.boolean().describe('An identical comment in the dedupe window is it'),
      recovered: z.boolean().describe("Jira's answer was lost; the comment was found"),
      unchecked: z
        .string()
        .optional()
        .describe('Why the check for an earlier identical comment failed (it was posted anyway)'),
    }),
    target: (args) => keyTarget(scope, args.key),
    async handler(args, ctx) {
      const issue = await writableIssue(deps, ctx, args.key);
      const key = issue.key ?? args.key;
      const body = markdownToAdf(args.body);
      const dedupe = dedupeKey({ who: ctx.principal.id, key, body });
      const request = {
        issueIdOrKey: key,
        body,
        properties: [{ key: DEDUPE_PROPERTY, value: { key: dedupe, audit_event: ctx.eventId } }],
      };
      if (ctx.dryRun) return ctx.preview(request, `Would comment on ${key}.`);
      const outcome = await postOnce(
        ctx.signal,
        () => findComment(jira, ctx, key, dedupe, config.JIRA_DEDUPE_WINDOW_MIN),
        async () => {
          const comment = await writeCall(deps, ctx, `comment on ${key}`, (api) =>
            api.issueComments.addComment(request),
          );
          return comment.id ?? '';
        },
        { mapError: jiraError, onLookupFailure: 'post' },
      );
      const { value, deduplicated, recovered } = outcome;
      return {
        structured: {
          key,
          comment_id: value,
          deduplicated,
          recovered,
          ...(outcome.unchecked === undefined ? {} : { unchecked: outcome.unchecked }),
        },
        text: `${writeSaid(outcome, 'commented', `a comment on ${key}`)} on ${key} (comment ${value}).`,
      };
    },
  });
}

/** `jira_transition_issue` (write): a transition by its name or the status it leads to. */
export function transitionIssueTool(deps: JiraDeps) {
  const { scope, jira } = deps;
  return defineTool({
    name: 'jira_transition_issue',
    title: 'Move an issue',
    description:
      'Move an issue through its workflow by the transition’s name or the status it leads to (e.g. "Done"), with a resolution when the transition asks for one. Moving it to the status it has changes nothing.',
    access: 'write',
    annotations: { ...JIRA_WRITE, idempotentHint: true },
    input: z.strictObject({
      key: KeyArg,
      to: z.string().min(1).max(60).describe('The transition name, or the target status name.'),
      resolution: z
        .string()
        .min(1)
        .max(60)
        .optional()
        .describe('Resolution name, for transitions that ask for one (Done, Won’t Do…).'),
    }),
    output: z.object({ key: z.string(), from: z.string(), to: z.string(), changed: z.boolean() }),
    target: (args) => keyTarget(scope, args.key),
    async handler(args, ctx) {
      const issue = await writableIssue(deps, ctx, args.key);
      const key = issue.key ?? args.key;
      const from = issue.fields?.status?.name ?? '';
      const wanted = args.to.trim().toLowerCase();
      if (from.toLowerCase() === wanted) {
        return {
          structured: { key, from, to: from, changed: false },
          text: `${key} is already ${from}; nothing changed.`,
        };
      }
      const { transitions = [] } = await jira.call(ctx, 'read', (api) =>
        api.issues.getTransitions({ issueIdOrKey: key, expand: 'transitions.fields' }),
      );
      const t = transitions.find(
        (x) => x.name?.toLowerCase() === wanted || x.to?.name?.toLowerCase() === wanted,
      );
      if (t?.id === undefined) {
        throw new ToolError(
          `${key} (${from}) has no transition "${args.to}"; available: ${transitions.map((x) => `${x.name} → ${x.to?.name}`).join(', ') || 'none'}.`,
          { code: 'invalid_transition' },
        );
      }
      // The transition's screen: a resolution is set from the argument; any other required field
      // is named, and nothing is sent.
      const screen = (t.fields ?? {}) as Record<
        string,
        { required?: boolean; name?: string; allowedValues?: Array<{ name?: string }> }
      >;
      const fields: Record<string, unknown> = {};
      const missing: string[] = [];
      for (const [id, f] of Object.entries(screen)) {
        if (f.required !== true) continue;
        if (id === 'resolution' && args.resolution !== undefined) {
          const names = (f.allowedValues ?? []).map((v) => v.name ?? '');
          const pick = names.find((n) => n.toLowerCase() === args.resolution!.toLowerCase());
          if (pick === undefined) {
            throw new ToolError(`resolution must be one of: ${names.join(', ')}.`, {
              code: 'invalid_resolution',
            });
          }
          fields.resolution = { name: pick };
        } else {
          const allowed = (f.allowedValues ?? []).map((v) => v.name).filter(Boolean);
          missing.push(
            `${id} (${f.name ?? id}${allowed.length === 0 ? '' : `: ${allowed.join(', ')}`})`,
          );
        }
      }
      if (missing.length > 0) {
        throw new ToolError(
          `The transition "${t.name}" of ${key} needs: ${missing.join('; ')}. Nothing was changed.`,
          { code: 'transition_fields' },
        );
      }
      const request = {
        issueIdOrKey: key,
        transition: { id: t.id },
        ...(Object.keys(fields).length === 0 ? {} : { fields }),
      };
      const to = t.to?.name ?? t.name ?? '';
      if (ctx.dryRun) return ctx.preview(request, `Would move ${key} from ${from} to ${to}.`);
      await writeCall(deps, ctx, `transition ${key}`, (api) => api.issues.doTransition(request));
      return {
        structured: { key, from, to, changed: true },
        text: `Moved ${key} from ${from} to ${to}.`,
      };
    },
  });
}
