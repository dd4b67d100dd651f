import type { CallBounds, Jira } from './client.js';

/** The prefix of the user properties that record creates. */
const PREFIX = 'gatehouse.create.';
/** Stale records one lookup deletes at most (the rest go with later creates). */
const PRUNE = 10;

/** What the journal holds of one create. */
export interface JournalEntry {
  /** `sending`: the create went out and its answer never came (or has not yet). */
  state: 'sending' | 'made';
  /** When the create went out (ms since the epoch). */
  at: number;
  project: string;
  /** The id, once Jira answered. */
  id?: string;
}

/**
 * The creates of this server's Jira account, kept where every replica and every restart reads
 * them at once: entity properties of the account's own user record, one per create
 * (`gatehouse.create.<sent-at, base 36>.<content key>`). Any account with access to Jira may set
 * properties on its own record ("Access to Jira, to set a property on the calling user's
 * record": https://developer.atlassian.com/cloud/jira/platform/rest/v3/api-group-user-properties/),
 * and a property is read directly, not through search — which lags behind writes by "a few
 * seconds to minutes" (https://developer.atlassian.com/cloud/jira/platform/search-and-reconcile/).
 * So a repeat of a create whose answer was lost finds the issue by id, on any replica; and a
 * create whose answer never came is known to be `sending`, which search alone cannot tell from
 * "never made" until it has caught up. ADR 0012.
 */
export class CreateJournal {
  #me: Promise<string> | undefined;

  constructor(
    private readonly jira: Jira,
    /** How long a record is kept: the dedupe window and Jira's search lag. */
    private readonly keepMs: number,
  ) {}

  /** The account the server runs as (its own record is the only one written). */
  #account(bounds: CallBounds): Promise<string> {
    this.#me ??= this.jira
      .call(bounds, 'read', (api) => api.myself.getCurrentUser())
      .then((me) => me.accountId ?? '');
    return this.#me.catch((error: unknown) => {
      this.#me = undefined;
      throw error;
    });
  }

  /**
   * The record of the create with content `key` within the kept time, if any. The same listing
   * names the records older than that: they are deleted meanwhile (at most ten a lookup).
   */
  async entry(
    bounds: CallBounds,
    key: string,
  ): Promise<(JournalEntry & { property: string }) | undefined> {
    const since = Date.now() - this.keepMs;
    const records = await this.#records(bounds);
    const stale = records.filter((k) => sentAt(k) < since).slice(0, PRUNE);
    const pruned = Promise.allSettled(stale.map((k) => this.forget(bounds, k)));
    const property = records
      .filter((k) => k.endsWith(`.${key}`) && sentAt(k) >= since)
      .sort()
      .at(-1);
    const read = async () => {
      if (property === undefined) return undefined;
      const accountId = await this.#account(bounds);
      const { value } = await this.jira.call(bounds, 'read', (api) =>
        api.userProperties.getUserProperty({ accountId, propertyKey: property }),
      );
      const entry = value as Partial<JournalEntry> | undefined;
      if (entry?.state !== 'sending' && entry?.state !== 'made') return undefined;
      return { ...(entry as JournalEntry), property };
    };
    const [found] = await Promise.all([read(), pruned]);
    return found;
  }

  /** Records that the create with content `key` is going out now; returns its record's name. */
  async sending(bounds: CallBounds, key: string, project: string): Promise<string> {
    const at = Date.now();
    const property = `${PREFIX}${at.toString(36)}.${key}`;
    await this.#put(bounds, property, { state: 'sending', at, project });
    return property;
  }

  /** Records the issue a create made. */
  made(bounds: CallBounds, property: string, entry: JournalEntry): Promise<void> {
    return this.#put(bounds, property, entry);
  }

  /** Deletes a record (a create Jira refused made nothing to remember). */
  async forget(bounds: CallBounds, property: string): Promise<void> {
    const accountId = await this.#account(bounds);
    await this.jira.call(bounds, 'write', (api) =>
      api.userProperties.deleteUserProperty({ accountId, propertyKey: property }),
    );
  }

  /** The names of the journal's records on the account's user record. */
  async #records(bounds: CallBounds): Promise<string[]> {
    const accountId = await this.#account(bounds);
    const { keys = [] } = await this.jira.call(bounds, 'read', (api) =>
      api.userProperties.getUserPropertyKeys({ accountId }),
    );
    return keys.map((k) => k.key ?? '').filter((k) => k.startsWith(PREFIX));
  }

  async #put(bounds: CallBounds, property: string, entry: JournalEntry): Promise<void> {
    const accountId = await this.#account(bounds);
    await this.jira.call(bounds, 'write', (api) =>
      api.userProperties.setUserProperty({
        accountId,
        propertyKey: property,
        body: { ...entry },
      }),
    );
  }
}

/** When a record's create went out, from its name (0 when unreadable: stale). */
function sentAt(property: string): number {
  const at = parseInt(property.slice(PREFIX.length).split('.')[0] ?? '', 36);
  return Number.isFinite(at) ? at : 0;
}
