/**
 * Where sealed grants are kept (ADR 0026): Redis when replicas share one (as the rate limits
 * do), else one file, mode 0600, for a single instance. A store holds only sealed records under
 * hashed keys: nothing in it names a person or holds a token in the clear.
 */
import { randomUUID } from 'node:crypto';
import { chmodSync, renameSync, writeFileSync } from 'node:fs';
import { holdFileLock } from '@gatehouse/audit';
import type { Redis } from 'ioredis';
import { ConfigError } from '../errors.js';
import { privateFileText } from './private-file.js';

export interface GrantStore {
  readonly name: 'redis' | 'file';
  get(key: string): Promise<string | undefined>;
  set(key: string, record: string): Promise<void>;
  /** True when there was a record to delete. */
  delete(key: string): Promise<boolean>;
  /**
   * Runs `fn` while no other holder of `key`'s lock runs — in this process for a file, across
   * every replica for Redis (a refresh token rotates: two refreshes at once would lose it).
   */
  exclusive<T>(key: string, fn: () => Promise<T>): Promise<T>;
  /**
   * True the first time `id` is claimed within `ms` (a connect flow's handle: a replayed link or
   * `state` finds it spent), false after — on every replica for Redis.
   */
  claim(id: string, ms: number): Promise<boolean>;
  close(): Promise<void>;
}

/** Claims remembered in this process, each until it expires. */
function processClaims(): GrantStore['claim'] {
  const claimed = new Map<string, number>();
  return async (id, ms) => {
    const now = Date.now();
    for (const [key, until] of claimed) if (until <= now) claimed.delete(key);
    if (claimed.has(id)) return false;
    claimed.set(id, now + ms);
    return true;
  };
}

/** How long a replica may hold a grant's lock (a refresh is one request), and wait for one. */
const LOCK_MS = 15_000;

/** One lock per key within this process: each holder runs after the one before has ended. */
function processLocks(): GrantStore['exclusive'] {
  const tails = new Map<string, Promise<void>>();
  return (key, fn) => {
    const run = (tails.get(key) ?? Promise.resolve()).then(fn);
    const tail = run.then(
      () => undefined,
      () => undefined,
    );
    tails.set(key, tail);
    void tail.then(() => {
      if (tails.get(key) === tail) tails.delete(key);
    });
    return run;
  };
}

/** Deletes the lock only if this holder still holds it (it may have expired and moved on). */
const RELEASE = `if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) end return 0`;

/**
 * One JSON file of `key → record`, rewritten whole on each change (a temporary file, then a
 * rename: a crash leaves the old file or the new, never half of one), mode 0600. A file that
 * group or others can read is refused, as ssh refuses such a key. One process owns it — it holds
 * `<file>.lock` as an audit writer does, and a second process is refused (two would lose each
 * other's grants, and refresh one grant twice): the in-memory copy is the truth while it runs.
 */
export function fileGrantStore(path: string, variable: string): GrantStore {
  const lock = holdFileLock(
    path,
    (holder, lockPath) =>
      new ConfigError([
        `${variable}: ${path} is in use by ${holder} (its lock ${lockPath} is held). A grant file serves one instance; replicas share grants through GATEHOUSE_REDIS_URL.`,
      ]),
  );
  try {
    return openGrantFile(path, variable, lock);
  } catch (error) {
    lock.release();
    throw error;
  }
}

function openGrantFile(path: string, variable: string, lock: { release(): void }): GrantStore {
  const records = new Map<string, string>();
  const text = privateFileText(path, variable, 'empty');
  if (text !== undefined) {
    let parsed: unknown;
    try {
      parsed = JSON.parse(text);
    } catch {
      parsed = undefined;
    }
    if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) {
      throw new ConfigError([
        `${variable}: ${path} is not a grant file (a JSON object); move it away to start empty`,
      ]);
    }
    for (const [key, record] of Object.entries(parsed)) {
      if (typeof record === 'string') records.set(key, record);
    }
  }
  const save = (): void => {
    const temporary = `${path}.${process.pid}.tmp`;
    writeFileSync(temporary, `${JSON.stringify(Object.fromEntries(records))}\n`, { mode: 0o600 });
    chmodSync(temporary, 0o600); // a temporary file a crash left keeps its old mode otherwise
    renameSync(temporary, path);
  };
  return {
    name: 'file',
    get: async (key) => records.get(key),
    set: async (key, record) => {
      records.set(key, record);
      save();
    },
    delete: async (key) => {
      if (!records.delete(key)) return false;
      save();
      return true;
    },
    exclusive: processLocks(),
    claim: processClaims(),
    close: async () => {
      lock.release();
    },
  };
}

/**
 * Redis (ioredis) under `gatehouse:<service>:grant:<key>`. Unlike the rate limits, a grant
 * lookup waits for a reconnect for a moment (the offline queue is on, a command times out after
 * 2 s): no lookup is ever answered by anything but the store, and a store that is down fails the
 * call, never falls back to another credential. The client is made on first use.
 */
export function redisGrantStore(url: string, service: string): GrantStore {
  let made: Promise<Redis> | undefined;
  const redis = () =>
    (made ??= import('ioredis').then(({ Redis }) => {
      const client = new Redis(url, {
        maxRetriesPerRequest: 1,
        connectTimeout: 2_000,
        commandTimeout: 2_000,
        retryStrategy: (attempt) => Math.min(attempt * 200, 2_000),
      });
      client.on('error', () => undefined); // each command fails on its own; the call says so
      return client;
    }));
  const prefix = `gatehouse:${service}:grant:`;
  const local = processLocks();
  return {
    name: 'redis',
    get: async (key) => (await (await redis()).get(prefix + key)) ?? undefined,
    set: async (key, record) => {
      await (await redis()).set(prefix + key, record);
    },
    delete: async (key) => (await (await redis()).del(prefix + key)) > 0,
    // The process's own lock first (its calls queue without polling Redis), then Redis's
    // (SET NX PX, released only by its holder) against the other replicas.
    exclusive: (key, fn) =>
      local(key, async () => {
        const lock = `${prefix}lock:${key}`;
        const holder = randomUUID();
        const giveUp = Date.now() + LOCK_MS;
        while ((await (await redis()).set(lock, holder, 'PX', LOCK_MS, 'NX')) !== 'OK') {
          if (Date.now() > giveUp) {
            throw new Error('another replica held this grant for too long; try again');
          }
          await new Promise((resolve) => setTimeout(resolve, 50));
        }
        try {
          return await fn();
        } finally {
          await (await redis()).eval(RELEASE, 1, lock, holder).catch(() => undefined);
        }
      }),
    claim: async (id, ms) =>
      (await (await redis()).set(`${prefix}claim:${id}`, '1', 'PX', ms, 'NX')) === 'OK',
    close: async () => {
      if (made !== undefined) (await made).disconnect();
    },
  };
}
