import type { CallBounds, Slack } from './client.js';

const MAX_CACHED = 5_000;
const TTL_MS = 60 * 60_000;

/**
 * Display names of user ids, resolved with users.info and cached (an hour, at most 5 000): a page
 * of 50 messages by a handful of people costs a handful of calls once. A name that cannot be
 * resolved (no users:read, deleted user) shows as the id.
 */
export class People {
  readonly #names = new Map<string, { name: string; at: number }>();

  constructor(private readonly slack: Slack) {}

  /** The display names of these ids (looked up in parallel, cached). */
  async names(bounds: CallBounds, ids: Iterable<string>): Promise<Map<string, string>> {
    const wanted = [...new Set(ids)].filter((id) => /^[UWB][A-Z0-9]{2,}$/.test(id));
    const now = Date.now();
    const missing = wanted.filter((id) => {
      const hit = this.#names.get(id);
      return hit === undefined || now - hit.at > TTL_MS;
    });
    await Promise.all(
      missing.map(async (id) => {
        try {
          const { user } = await this.slack.call(bounds, 'read', (c) => c.users.info({ user: id }));
          const name = user?.profile?.display_name || user?.real_name || user?.name || id;
          if (this.#names.size >= MAX_CACHED) this.#names.clear();
          this.#names.set(id, { name, at: now });
        } catch {
          // shown as the id
        }
      }),
    );
    return new Map(wanted.map((id) => [id, this.#names.get(id)?.name ?? id]));
  }
}
