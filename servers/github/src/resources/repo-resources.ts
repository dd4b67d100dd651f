import { repoName } from '../scope.js';
import { defineResource } from '@gatehouse/core';
import type { RequestContext } from '@gatehouse/core';
import { call, requestOptions } from '../client.js';
import { framedStrings } from '@gatehouse/core/saas';
import type { GitHubDeps } from '../deps.js';
import { parseRepo } from '../scope.js';
import type { RepoRef } from '../scope.js';
import { readTemplates } from '../templates.js';

/**
 * Per allowed repository: its labels, milestones and issue templates — what a new or triaged
 * issue should use. Listed for every configured owner/repo; owner/* repositories are readable
 * by URI (and completable) but not listed.
 */

/** Keys whose values are GitHub's or ours, never a user's text. */
const OWN_KEYS = new Set([
  'repo',
  'file',
  'kind',
  'type',
  'id',
  'color',
  'state',
  'due_on',
  'problems',
]);

type Reader = (deps: GitHubDeps, ctx: RequestContext, repo: RepoRef) => Promise<unknown>;

const readers: Record<string, { title: string; description: string; read: Reader }> = {
  labels: {
    title: 'Labels',
    description: 'The labels of the repository: name, colour, description.',
    read: async (deps, ctx, repo) => {
      const acting = await deps.accounts.for(ctx);
      const labels = await call(ctx, () =>
        acting.github.paginate(acting.github.rest.issues.listLabelsForRepo, {
          owner: repo.owner,
          repo: repo.repo,
          per_page: 100,
          ...requestOptions(ctx),
        }),
      );
      return labels.map((l) => ({
        name: l.name,
        color: l.color,
        description: l.description ?? null,
      }));
    },
  },
  milestones: {
    title: 'Milestones',
    description: 'Open and closed milestones: number, title, state, due date, progress.',
    read: async (deps, ctx, repo) => {
      const acting = await deps.accounts.for(ctx);
      const milestones = await call(ctx, () =>
        acting.github.paginate(acting.github.rest.issues.listMilestones, {
          owner: repo.owner,
          repo: repo.repo,
          state: 'all',
          per_page: 100,
          ...requestOptions(ctx),
        }),
      );
      return milestones.map((m) => ({
        number: m.number,
        title: m.title,
        state: m.state,
        due_on: m.due_on ?? null,
        open_issues: m.open_issues,
        closed_issues: m.closed_issues,
        description: m.description ?? null,
      }));
    },
  },
  'issue-templates': {
    title: 'Issue templates',
    description:
      'The issue templates and forms of .github/ISSUE_TEMPLATE: names, title prefixes, labels, and the sections or fields a new issue must fill.',
    read: async (deps, ctx, repo) =>
      readTemplates((await deps.accounts.for(ctx)).github, ctx, repo),
  },
};

/** The three resource templates (`github://{owner}/{repo}/labels`, `/milestones`, `/issue-templates`). */
export function repoResources(deps: GitHubDeps) {
  const { scope } = deps;
  return Object.entries(readers).map(([kind, r]) =>
    defineResource({
      kind: 'template',
      name: `github_${kind.replace('-', '_')}`,
      uriTemplate: `github://{owner}/{repo}/${kind}`,
      title: r.title,
      description: r.description,
      mimeType: 'application/json',
      list: () =>
        Promise.resolve(
          scope.names.map((name) => ({
            uri: `github://${name}/${kind}`,
            name: `${name} ${kind}`,
            title: `${r.title} of ${name}`,
            mimeType: 'application/json',
          })),
        ),
      complete: {
        owner: (value) =>
          [...new Set([...scope.names.map((n) => n.split('/')[0]!), ...scope.parents])].filter(
            (o) => o.toLowerCase().startsWith(value.toLowerCase()),
          ),
        repo: (value, { arguments: args }) =>
          scope.names
            .filter(
              (n) =>
                args.owner === undefined ||
                n.split('/')[0]!.toLowerCase() === args.owner.toLowerCase(),
            )
            .map((n) => n.split('/')[1]!)
            .filter((n) => n.toLowerCase().startsWith(value.toLowerCase())),
      },
      target: (v) => `github:${v.owner ?? ''}/${v.repo ?? ''}`,
      read: async (_uri, variables, ctx) => {
        const ref = parseRepo(`${variables.owner ?? ''}/${variables.repo ?? ''}`);
        if (ref === undefined || !scope.allows(repoName(ref))) return undefined;
        // What users wrote (names, titles, descriptions, template texts) framed, value by value.
        const body = framedStrings(
          await r.read(deps, ctx, ref),
          (t) => ctx.untrustedValue(t),
          OWN_KEYS,
        );
        return { text: JSON.stringify(body, null, 1), mimeType: 'application/json' };
      },
    }),
  );
}
