import { defineResource } from '@gatehouse/core';
import { framedStrings } from '@gatehouse/core/saas';
import type { Completer, RequestContext } from '@gatehouse/core';
import { createFieldsOf, issueTypesOf } from '../createmeta.js';
import type { JiraDeps } from '../deps.js';

/** Completes a project argument from the allow-list only. */
export function projectCompleter(deps: JiraDeps): Completer {
  return (value) => deps.scope.names.filter((p) => p.startsWith(value.trim().toUpperCase()));
}

/**
 * Keys whose values are Jira's own — field ids, status categories (one of three) — never an
 * admin's text; every other string of a resource is framed.
 */
const OWN_KEYS = new Set(['field', 'category']);

/** Allowed values listed per field; a select list of thousands would crowd out everything else. */
const ALLOWED_SHOWN = 50;

/**
 * A project's create metadata: issue types, and per type the fields with required flags and
 * allowed values (the first {@link ALLOWED_SHOWN}, and how many more there are).
 */
async function createMeta(deps: JiraDeps, ctx: RequestContext, project: string) {
  // Asked as the caller's account: what its create screens show it, never cached for another.
  const { jira } = await deps.accounts.for(ctx);
  const types = await issueTypesOf(jira, ctx, project);
  return Promise.all(
    types.map(async (t) => {
      const fields = (await createFieldsOf(jira, ctx, project, t.id ?? '')).map((f) => ({
        field: f.fieldId ?? f.key,
        name: f.name,
        required: f.required === true,
        type: f.schema?.type,
        ...(Array.isArray(f.allowedValues)
          ? {
              allowed: f.allowedValues.slice(0, ALLOWED_SHOWN).map((v) => v.name ?? v.value),
              ...(f.allowedValues.length > ALLOWED_SHOWN
                ? { allowed_more: f.allowedValues.length - ALLOWED_SHOWN }
                : {}),
            }
          : {}),
      }));
      return { type: t.name, subtask: t.subtask === true, fields };
    }),
  );
}

/** A project's workflow statuses per issue type. */
async function statuses(deps: JiraDeps, ctx: RequestContext, project: string) {
  const { jira } = await deps.accounts.for(ctx);
  const types = await jira.call(ctx, 'read', (api) =>
    api.projects.getAllStatuses({ projectIdOrKey: project }),
  );
  return types.map((t) => ({
    type: t.name,
    statuses: (t.statuses ?? []).map((x) => ({ name: x.name, category: x.statusCategory?.name })),
  }));
}

/** `jira://project/{project}/<part>`: one JSON document per allowed project, completed from the allow-list. */
function perProject(
  deps: JiraDeps,
  part: string,
  /** The listing's name after the project key (`OPS create metadata`). */
  noun: string,
  title: string,
  description: string,
  read: (deps: JiraDeps, ctx: RequestContext, project: string) => Promise<unknown>,
) {
  const { scope } = deps;
  return defineResource({
    kind: 'template',
    name: `jira_${part}`,
    uriTemplate: `jira://project/{project}/${part}`,
    title,
    description,
    mimeType: 'application/json',
    list: async () =>
      scope.names.map((key) => ({
        uri: `jira://project/${key}/${part}`,
        name: `${key} ${noun}`,
      })),
    complete: { project: projectCompleter(deps) },
    target: (v) => scope.target((v.project ?? '').toUpperCase()),
    read: async (_uri, variables, ctx) => {
      const project = (variables.project ?? '').toUpperCase();
      if (!scope.allows(project)) return undefined;
      // Names, types and values admins wrote are framed, value by value.
      const body = framedStrings(
        await read(deps, ctx, project),
        (t) => ctx.untrustedValue(t),
        OWN_KEYS,
      );
      return { text: JSON.stringify(body, null, 1), mimeType: 'application/json' };
    },
  });
}

/** `jira://projects`, `jira://project/{project}/createmeta` and `…/statuses` (completed from the allow-list). */
export function jiraResources(deps: JiraDeps) {
  const { scope } = deps;
  return [
    defineResource({
      kind: 'static',
      name: 'jira_projects',
      uri: 'jira://projects',
      title: 'Projects',
      description: 'The Jira projects this server may use.',
      mimeType: 'application/json',
      read: async () => ({
        text: JSON.stringify(
          scope.names.map((key) => ({
            key,
            url: `${deps.config.JIRA_URL.replace(/\/$/, '')}/browse/${key}`,
          })),
          null,
          1,
        ),
        mimeType: 'application/json',
      }),
    }),
    perProject(
      deps,
      'createmeta',
      'create metadata',
      'Create metadata',
      "A project's issue types and, per type, its fields: required or not, type, allowed values — what jira_create_issue needs.",
      createMeta,
    ),
    perProject(
      deps,
      'statuses',
      'statuses',
      'Workflow statuses',
      "A project's statuses per issue type, with their categories (To Do, In Progress, Done).",
      statuses,
    ),
  ];
}
