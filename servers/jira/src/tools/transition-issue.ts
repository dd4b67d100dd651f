import { ToolError, defineTool } from '@gatehouse/core';
import * as z from 'zod';
import type { JiraDeps } from '../deps.js';
import { keyTarget } from '../format.js';
import { JIRA_WRITE, writeCall, writableIssue } from '../writes.js';
import { KeyArg } from './write-common.js';

/** `jira_transition_issue` (write): a transition by its name or the status it leads to. */
export function transitionIssueTool(deps: JiraDeps) {
  const { scope } = deps;
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
      const call = await deps.accounts.deps(deps, ctx);
      const issue = await writableIssue(call, ctx, args.key);
      const key = issue.key ?? args.key;
      const from = issue.fields?.status?.name ?? '';
      const wanted = args.to.trim().toLowerCase();
      if (from.toLowerCase() === wanted) {
        return {
          structured: { key, from, to: from, changed: false },
          text: `${key} is already ${from}; nothing changed.`,
        };
      }
      const { transitions = [] } = await call.jira.call(ctx, 'read', (api) =>
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
      await writeCall(call, ctx, `transition ${key}`, (api) => api.issues.doTransition(request));
      return {
        structured: { key, from, to, changed: true },
        text: `Moved ${key} from ${from} to ${to}.`,
      };
    },
  });
}
