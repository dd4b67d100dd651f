import { parse as parseYaml } from 'yaml';
import * as z from 'zod';
import type { CallBounds, GitHub } from './client.js';
import { call, githubError, requestOptions } from './client.js';
import type { RepoRef } from './scope.js';

/**
 * Issue templates and issue forms from `.github/ISSUE_TEMPLATE`: the schema a new issue in the
 * repository should follow. Markdown templates carry YAML front matter; forms are YAML with a
 * `body` of fields, which GitHub renders into the issue as `### <label>` sections.
 */

export const TemplateFieldSchema = z.object({
  id: z.string().nullable(),
  type: z.string().describe('textarea, input, dropdown, checkboxes'),
  label: z.string(),
  description: z.string().nullable(),
  required: z.boolean(),
  options: z.array(z.string()).optional(),
});

export const IssueTemplateSchema = z.object({
  file: z.string(),
  kind: z.enum(['markdown', 'form']),
  name: z.string(),
  about: z.string().nullable(),
  title_prefix: z.string().nullable(),
  labels: z.array(z.string()),
  assignees: z.array(z.string()),
  body: z.string().nullable().describe('Markdown templates: the body to fill in'),
  fields: z.array(TemplateFieldSchema).describe('Forms: the fields, rendered as ### sections'),
});
export type IssueTemplate = z.infer<typeof IssueTemplateSchema>;

export const TemplatesSchema = z.object({
  repo: z.string(),
  blank_issues_enabled: z.boolean(),
  templates: z.array(IssueTemplateSchema),
  problems: z.array(z.string()).describe('Template files that could not be read'),
});
export type Templates = z.infer<typeof TemplatesSchema>;

const DIR = '.github/ISSUE_TEMPLATE';

function list(value: unknown): string[] {
  if (Array.isArray(value)) return value.map(String).filter((s) => s !== '');
  if (typeof value === 'string')
    return value
      .split(',')
      .map((s) => s.trim())
      .filter((s) => s !== '');
  return [];
}

const text = (value: unknown): string | null =>
  typeof value === 'string' && value.trim() !== '' ? value : null;

/** Parses one template file (exported for tests). */
export function parseTemplate(file: string, content: string): IssueTemplate {
  if (/\.md$/i.test(file)) {
    const m = /^---\r?\n([\s\S]*?)\r?\n---\r?\n?([\s\S]*)$/.exec(content);
    const meta = (m === null ? {} : (parseYaml(m[1]!) ?? {})) as Record<string, unknown>;
    return {
      file,
      kind: 'markdown',
      name: text(meta.name) ?? file.split('/').at(-1)!,
      about: text(meta.about),
      title_prefix: text(meta.title),
      labels: list(meta.labels),
      assignees: list(meta.assignees),
      body: (m === null ? content : m[2]!).trim() || null,
      fields: [],
    };
  }
  const form = (parseYaml(content) ?? {}) as Record<string, unknown>;
  if (!Array.isArray(form.body)) throw new Error('an issue form needs a body list');
  const fields = (form.body as Array<Record<string, unknown>>)
    .filter((f) => f.type !== 'markdown')
    .map((f) => {
      const attributes = (f.attributes ?? {}) as Record<string, unknown>;
      const options = Array.isArray(attributes.options)
        ? attributes.options.map((o) =>
            typeof o === 'object' && o !== null
              ? String((o as { label?: unknown }).label)
              : String(o),
          )
        : undefined;
      return {
        id: text(f.id),
        type: String(f.type),
        label: text(attributes.label) ?? String(f.id ?? f.type),
        description: text(attributes.description),
        required: (f.validations as { required?: unknown } | undefined)?.required === true,
        ...(options === undefined ? {} : { options }),
      };
    });
  return {
    file,
    kind: 'form',
    name: text(form.name) ?? file.split('/').at(-1)!,
    about: text(form.description),
    title_prefix: text(form.title),
    labels: list(form.labels),
    assignees: list(form.assignees),
    body: null,
    fields,
  };
}

/** Reads and parses the repository's templates (none when the directory does not exist). */
export async function readTemplates(
  github: GitHub,
  bounds: CallBounds,
  repo: RepoRef,
): Promise<Templates> {
  const name = `${repo.owner}/${repo.repo}`;
  const result: Templates = { repo: name, blank_issues_enabled: true, templates: [], problems: [] };
  let entries: Array<{ type: string; path: string; name: string }>;
  try {
    const { data } = await github.rest.repos.getContent({
      owner: repo.owner,
      repo: repo.repo,
      path: DIR,
      ...requestOptions(bounds),
    });
    entries = Array.isArray(data) ? data : [];
  } catch (error) {
    if ((error as { status?: number }).status === 404) return result;
    throw githubError(error, bounds.signal);
  }
  for (const entry of entries.filter((e) => e.type === 'file' && /\.(md|ya?ml)$/i.test(e.name))) {
    const { data } = await call(bounds, () =>
      github.rest.repos.getContent({
        owner: repo.owner,
        repo: repo.repo,
        path: entry.path,
        ...requestOptions(bounds),
      }),
    );
    const content = Buffer.from((data as { content?: string }).content ?? '', 'base64').toString(
      'utf8',
    );
    if (/^config\.ya?ml$/i.test(entry.name)) {
      const config = (parseYaml(content) ?? {}) as { blank_issues_enabled?: unknown };
      if (config.blank_issues_enabled === false) result.blank_issues_enabled = false;
      continue;
    }
    try {
      result.templates.push(parseTemplate(entry.path, content));
    } catch (error) {
      result.problems.push(`${entry.path}: ${(error as Error).message}`);
    }
  }
  return result;
}

/** Finds a template by file name, path or display name (case-insensitive). */
export function findTemplate(templates: Templates, wanted: string): IssueTemplate | undefined {
  const w = wanted.toLowerCase();
  return templates.templates.find(
    (t) =>
      t.name.toLowerCase() === w ||
      t.file.toLowerCase() === w ||
      t.file.split('/').at(-1)!.toLowerCase() === w ||
      t.file
        .split('/')
        .at(-1)!
        .replace(/\.(md|ya?ml)$/i, '')
        .toLowerCase() === w,
  );
}

/** The required form fields a body leaves empty (GitHub renders each as `### Label`). */
export function missingFormFields(template: IssueTemplate, body: string): string[] {
  if (template.kind !== 'form') return [];
  const missing: string[] = [];
  for (const field of template.fields.filter((f) => f.required)) {
    const escaped = field.label.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
    const m = new RegExp(`^###\\s+${escaped}\\s*$([\\s\\S]*?)(?=^###\\s|(?![\\s\\S]))`, 'mi').exec(
      body,
    );
    const content = m?.[1]?.trim() ?? '';
    if (content === '' || content === '_No response_') missing.push(field.label);
  }
  return missing;
}

/** The body skeleton of a form (`### Label` sections), for prompts and error messages. */
export function formSkeleton(template: IssueTemplate): string {
  if (template.kind === 'markdown') return template.body ?? '';
  return template.fields
    .map((f) =>
      `### ${f.label}\n\n${f.description ?? ''}${f.options ? ` (one of: ${f.options.join(', ')})` : ''}${f.required ? ' [required]' : ''}`.trim(),
    )
    .join('\n\n');
}
