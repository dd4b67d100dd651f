import type { FakeIssue, FakeRepo, GitHubRoutes } from './github-world.js';
import type { GitHubShapes } from './github-shapes.js';

/** One qualifier of a search query. */
interface Qualifier {
  key: string;
  value: string;
  negated: boolean;
}

/** Parses a search query: qualifiers (`key:value`, `key:"a b"`, `-key:v`), phrases and words. */
export function parseSearchQuery(q: string): {
  qualifiers: Array<{ key: string; value: string; negated: boolean }>;
  terms: string[];
} {
  const qualifiers: Array<{ key: string; value: string; negated: boolean }> = [];
  const terms: string[] = [];
  const pattern = /(-?)([a-z-]+):(?:"([^"]*)"|(\S+))|"([^"]*)"|(\S+)/gi;
  for (const m of q.matchAll(pattern)) {
    if (m[2] !== undefined) {
      qualifiers.push({
        key: m[2].toLowerCase(),
        value: m[3] ?? m[4] ?? '',
        negated: m[1] === '-',
      });
    } else {
      const term = m[5] ?? m[6] ?? '';
      if (term !== '' && !/^(AND|OR|NOT)$/.test(term)) terms.push(term.toLowerCase());
    }
  }
  return { qualifiers, terms };
}

/** Whether one qualifier of a search (`label:bug`, `-author:x`, `updated:>=2025-01-01`) holds for an issue. */
function qualifierHolds({ key, value, negated }: Qualifier, r: FakeRepo, i: FakeIssue): boolean {
  const v = value.toLowerCase();
  let hit: boolean;
  switch (key) {
    case 'repo':
    case 'org':
    case 'user':
      return true;
    case 'is':
    case 'type':
      hit = v === 'issue' ? !i.pull_request : v === 'pr' ? Boolean(i.pull_request) : v === i.state;
      break;
    case 'state':
      hit = v === i.state;
      break;
    case 'label':
      hit = i.labels.some((l) => l.toLowerCase() === v);
      break;
    case 'author':
      hit = i.user.toLowerCase() === v;
      break;
    case 'assignee':
      hit = i.assignees.some((a) => a.toLowerCase() === v);
      break;
    case 'mentions':
      hit = (i.body ?? '').toLowerCase().includes(`@${v}`);
      break;
    case 'milestone':
      hit = r.milestones.some((m) => m.number === i.milestone && m.title.toLowerCase() === v);
      break;
    case 'no':
      hit =
        v === 'label'
          ? i.labels.length === 0
          : v === 'assignee'
            ? i.assignees.length === 0
            : v === 'milestone'
              ? i.milestone === null
              : false;
      break;
    case 'in':
      return true;
    case 'created':
    case 'updated': {
      const date = key === 'created' ? i.created_at : i.updated_at;
      const m = /^(>=|<=|>|<)?(.+)$/.exec(value)!;
      const bound = m[2]!;
      hit =
        m[1] === '>='
          ? date >= bound
          : m[1] === '>'
            ? date > bound
            : m[1] === '<='
              ? date <= `${bound}~`
              : m[1] === '<'
                ? date < bound
                : date.startsWith(bound);
      break;
    }
    default:
      hit = false;
  }
  return negated ? !hit : hit;
}

/**
 * `GET /search/issues`: the qualifiers GitHub's issue search knows, scoped by `repo:`/`org:`/
 * `user:` to what the credential reaches (422 for a repository it cannot see), sorted, paged.
 */
export function searchRoutes(api: GitHubRoutes, shapes: GitHubShapes): void {
  const { world, route, send, error, paginate } = api;
  const { fullName, reaches, repoOf } = world;
  route('GET', '/search/issues', ({ res, url, cred, meta }) => {
    if (cred === 'app')
      return error(res, meta, 403, 'A JSON web token cannot be used to access this resource');
    const q = url.searchParams.get('q') ?? '';
    if (q.trim() === '') {
      return error(res, meta, 422, 'Validation Failed', {
        errors: [{ resource: 'Search', field: 'q', code: 'missing' }],
      });
    }
    const { qualifiers, terms } = parseSearchQuery(q);
    const scoped = qualifiers.filter((x) => ['repo', 'org', 'user'].includes(x.key) && !x.negated);
    for (const s of scoped.filter((x) => x.key === 'repo')) {
      const [o, n] = s.value.split('/');
      const r = repoOf(o ?? '', n ?? '');
      if (r === undefined || !reaches(cred, r)) {
        return error(res, meta, 422, 'Validation Failed', {
          errors: [
            {
              message:
                'The listed users and repositories cannot be searched either because the resources do not exist or you do not have permission to view them.',
              resource: 'Search',
              field: 'q',
              code: 'invalid',
            },
          ],
        });
      }
    }
    const candidates = world.repos.filter(
      (r) =>
        reaches(cred, r) &&
        (scoped.length === 0 ||
          world.options.unscopedSearch === true ||
          scoped.some((s) =>
            s.key === 'repo'
              ? s.value.toLowerCase() === fullName(r).toLowerCase()
              : s.value.toLowerCase() === r.owner.toLowerCase(),
          )),
    );
    const items: Array<{ r: FakeRepo; i: FakeIssue }> = [];
    for (const r of candidates) {
      for (const i of r.issues) {
        const ok = qualifiers.every((q) => qualifierHolds(q, r, i));
        const text = `${i.title}\n${i.body ?? ''}`.toLowerCase();
        if (ok && terms.every((t) => text.includes(t))) items.push({ r, i });
      }
    }
    const sort = url.searchParams.get('sort');
    const order = url.searchParams.get('order') ?? 'desc';
    if (sort === 'created' || sort === 'updated' || sort === 'comments') {
      const key = ({ i }: { i: FakeIssue }) =>
        sort === 'comments'
          ? String(i.comments.length).padStart(8, '0')
          : sort === 'created'
            ? i.created_at
            : i.updated_at;
      items.sort((a, b) => (key(a) < key(b) ? -1 : key(a) > key(b) ? 1 : 0));
      if (order === 'desc') items.reverse();
    }
    const { page, headers } = paginate(url, items);
    send(
      res,
      meta,
      200,
      {
        total_count: items.length,
        incomplete_results: false,
        search_type: 'lexical',
        items: page.map(({ r, i }) => {
          const { reactions: _reactions, ...rest } = shapes.issue(r, i);
          return { ...rest, score: 1 };
        }),
      },
      headers,
    );
  });
}
