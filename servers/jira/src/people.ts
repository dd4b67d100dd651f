import { ToolError } from '@gatehouse/core';
import type { CallBounds, Jira } from './client.js';
import { quote } from './jql.js';

/**
 * A person as the model names them — "me", "unassigned", a name or an e-mail — as a JQL value:
 * `currentUser()`, `EMPTY`, or the quoted account id Jira's user search found. An ambiguous or
 * unknown name is a clear error listing who matched.
 */
export async function personJql(
  jira: Jira,
  bounds: CallBounds,
  who: string,
  role: string,
  projects: readonly string[],
): Promise<string> {
  const w = who.trim();
  if (/^me$/i.test(w)) return 'currentUser()';
  if (/^unassigned$/i.test(w)) {
    if (role !== 'assignee') throw new ToolError(`"unassigned" applies to the assignee only.`);
    return 'EMPTY';
  }
  return quote(await searchAccount(jira, bounds, w, role, projects));
}

/**
 * The one account a name or e-mail names among the people who may browse one of the server's
 * projects (Jira's "find users with browse permission", per project), or a clear error. Nobody
 * outside them is named, not even in the list of an ambiguous name.
 */
async function searchAccount(
  jira: Jira,
  bounds: CallBounds,
  who: string,
  role: string,
  projects: readonly string[],
): Promise<string> {
  const found = new Map<
    string,
    {
      accountId?: string | undefined;
      displayName?: string | undefined;
      emailAddress?: string | undefined;
    }
  >();
  for (const projectKey of projects) {
    const page = await jira.call(bounds, 'read', (api) =>
      api.userSearch.findUsersWithBrowsePermission({ query: who, projectKey, maxResults: 10 }),
    );
    for (const u of page) if (u.accountId !== undefined) found.set(u.accountId, u);
  }
  const users = [...found.values()];
  const exact = users.filter(
    (u) =>
      u.displayName?.toLowerCase() === who.toLowerCase() ||
      u.emailAddress?.toLowerCase() === who.toLowerCase(),
  );
  const pick = exact.length === 1 ? exact : users;
  if (pick.length === 1 && pick[0]!.accountId !== undefined) return pick[0]!.accountId;
  if (pick.length === 0)
    throw new ToolError(`No Jira user matches "${who}" for ${role}.`, { code: 'user_not_found' });
  throw new ToolError(
    `"${who}" matches several people for ${role}: ${pick.map((u) => u.displayName ?? u.accountId).join(', ')}. Use a full name or e-mail.`,
    { code: 'user_ambiguous' },
  );
}

/** The account id of a person the model names ("me", a name, an e-mail); null for "unassigned". */
export async function accountIdOf(
  jira: Jira,
  bounds: CallBounds,
  who: string,
  role: string,
  projects: readonly string[],
): Promise<string | null> {
  const w = who.trim();
  if (/^unassigned$/i.test(w)) return null;
  if (/^me$/i.test(w)) {
    const me = await jira.call(bounds, 'read', (api) => api.myself.getCurrentUser());
    return me.accountId ?? null;
  }
  return searchAccount(jira, bounds, w, role, projects);
}
