import type { CallBounds, Jira } from './client.js';

/** An issue type of a project's create metadata. */
export interface CreateType {
  id?: string | undefined;
  name?: string | undefined;
  subtask?: boolean | undefined;
}

/** A field of an issue type's create metadata. */
export interface CreateField {
  fieldId?: string;
  key?: string;
  name?: string;
  required?: boolean;
  schema?: { type?: string };
  allowedValues?: Array<{ name?: string; value?: string }>;
}

/** Jira's page size for create metadata ("maxResults … Default: 50"). */
const PAGE = 50;
/** At most this many pages are read (1 000 types or fields): a bound, not a limit met in practice. */
const MAX_PAGES = 20;

/** Every item of a paged create-metadata answer (`startAt`, `maxResults`, `total`). */
async function allPages<T>(
  read: (startAt: number) => Promise<{ items: T[] | undefined; total?: number | undefined }>,
): Promise<T[]> {
  const all: T[] = [];
  for (let page = 0; page < MAX_PAGES; page++) {
    const { items = [], total } = await read(all.length);
    all.push(...items);
    if (items.length === 0 || all.length >= (total ?? all.length)) break;
  }
  return all;
}

/** The issue types of a project's create metadata, every page. */
export function issueTypesOf(
  jira: Jira,
  bounds: CallBounds,
  project: string,
): Promise<CreateType[]> {
  return allPages<CreateType>(async (startAt) => {
    const page = await jira.call(bounds, 'read', (api) =>
      api.issues.getCreateIssueMetaIssueTypes({
        projectIdOrKey: project,
        startAt,
        maxResults: PAGE,
      }),
    );
    return { items: page.issueTypes, total: page.total };
  });
}

/** The fields of an issue type's create metadata, every page. */
export function createFieldsOf(
  jira: Jira,
  bounds: CallBounds,
  project: string,
  issueTypeId: string,
): Promise<CreateField[]> {
  return allPages(async (startAt) => {
    const page = (await jira.call(bounds, 'read', (api) =>
      api.issues.getCreateIssueMetaIssueTypeId({
        projectIdOrKey: project,
        issueTypeId,
        startAt,
        maxResults: PAGE,
      }),
    )) as { fields?: CreateField[]; total?: number };
    return { items: page.fields, total: page.total };
  });
}
