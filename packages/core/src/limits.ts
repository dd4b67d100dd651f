import { randomUUID } from 'node:crypto';
import type { BaseConfig } from './config.js';
import type { Principal } from './principal.js';

/** Why a call may not start now, and when to try again. */
export interface Limited {
  rule: 'rate' | 'concurrency' | 'inflight' | 'rate_store';
  retryAfterSeconds: number;
  message: string;
}

/**
 * What the pipeline needs of a limiter: count one call for `key` when the last minute has room
 * for it, and say how many milliseconds until it would have (0: counted, the call may run).
 * Rejects only when the store itself fails.
 */
export interface RateLimiter {
  take(key: string): Promise<number>;
}

/** Builds the rate limiter for one access class (in this process, or in Redis). */
export type LimiterFactory = (pointsPerMinute: number, name: string) => RateLimiter;

const MINUTE_MS = 60_000;

/**
 * In memory: a sliding log per key — the times of the calls accepted in the last minute, oldest
 * first — so at most `perMinute` calls pass in any 60 seconds, however they are paced (fixed
 * windows, or a steady share beside a burst, let twice the rate through across a boundary).
 * Refused calls are not counted: a caller that backs off is served again when the minute allows.
 */
export const memoryLimiter: LimiterFactory = (perMinute) => {
  const logs = new Map<string, { times: number[]; head: number }>();
  return {
    take: (key: string) => {
      const now = Date.now();
      let log = logs.get(key);
      if (log === undefined) {
        // Forget idle keys now and then, so many callers do not grow the map without end.
        if (logs.size >= 10_000) {
          for (const [k, l] of logs) if (l.times.at(-1)! <= now - MINUTE_MS) logs.delete(k);
        }
        log = { times: [], head: 0 };
        logs.set(key, log);
      }
      const { times } = log;
      while (log.head < times.length && times[log.head]! <= now - MINUTE_MS) log.head++;
      if (times.length - log.head >= perMinute) {
        return Promise.resolve(Math.max(1, times[log.head]! + MINUTE_MS - now));
      }
      times.push(now);
      if (log.head > 1024 && log.head * 2 > times.length) {
        log.times = times.slice(log.head);
        log.head = 0;
      }
      return Promise.resolve(0);
    },
  };
};

/**
 * The same sliding log in Redis, one sorted set per key scored by Redis's own clock (replicas'
 * clocks may differ), in one script so that concurrent replicas cannot both take the last place.
 */
const REDIS_TAKE = `
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local window = tonumber(ARGV[1])
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now - window)
if redis.call('ZCARD', KEYS[1]) < tonumber(ARGV[2]) then
  redis.call('ZADD', KEYS[1], now, ARGV[3])
  redis.call('PEXPIRE', KEYS[1], window)
  return 0
end
local oldest = redis.call('ZRANGE', KEYS[1], 0, 0, 'WITHSCORES')
return math.max(1, tonumber(oldest[2]) + window - now)
`;

/** One limiter per access class. */
function classes(factory: LimiterFactory, perMinute: { read: number; write: number }) {
  return { read: factory(perMinute.read, 'read'), write: factory(perMinute.write, 'write') };
}

/** A store the replicas share their counters in (Redis), and whether it answers now. */
export interface SharedLimiterStore {
  /** For messages: `redis`. */
  readonly name: string;
  readonly factory: LimiterFactory;
  /** True while the store answers. */
  healthy(): boolean;
  close(): Promise<void>;
}

/**
 * Redis (ioredis) as the shared store: the same sliding log as {@link memoryLimiter}, kept in
 * Redis under `gatehouse:<service>:…`, so every replica of a server draws from one budget.
 * Commands fail at once while Redis is unreachable (no offline queue): the caller then applies
 * the configured fallback instead of hanging a call on a dead store. `onChange` hears every
 * up/down transition.
 */
export async function redisLimiterStore(
  url: string,
  service: string,
  onChange: (up: boolean, detail: string) => void,
): Promise<SharedLimiterStore> {
  const { Redis } = await import('ioredis');
  const client = new Redis(url, {
    enableOfflineQueue: false,
    maxRetriesPerRequest: 1,
    connectTimeout: 2_000,
    commandTimeout: 1_000,
    // Keep trying, at most every 2 s: the store comes back on its own when Redis does.
    retryStrategy: (attempt) => Math.min(attempt * 200, 2_000),
  });
  client.defineCommand('gatehouseTake', { numberOfKeys: 1, lua: REDIS_TAKE });
  const take = (
    client as unknown as Record<string, (...a: unknown[]) => Promise<number>>
  ).gatehouseTake!.bind(client);
  let up = false;
  let lastProblem = 'not connected yet';
  client.on('ready', () => {
    if (up) return;
    up = true;
    onChange(true, 'connected');
  });
  const down = (problem: string): void => {
    lastProblem = problem;
    if (!up) return;
    up = false;
    onChange(false, problem);
  };
  client.on('error', (error: Error) => down(error.message));
  client.on('close', () => down('connection closed'));
  // Wait briefly for the first connection, so a healthy start is not reported as a fallback.
  await new Promise<void>((resolve) => {
    const timer = setTimeout(resolve, 2_000);
    client.once('ready', () => {
      clearTimeout(timer);
      resolve();
    });
  });
  if (!up) onChange(false, lastProblem);
  const prefix = `gatehouse:${service}`;
  return {
    name: 'redis',
    healthy: () => up,
    factory: (perMinute, name) => ({
      take: async (key) =>
        Number(await take(`${prefix}:${name}:${key}`, MINUTE_MS, perMinute, randomUUID())),
    }),
    close: async () => {
      client.disconnect();
    },
  };
}

/** What a call is counted as: `method:name` with the registered name (or `unknown`). */
export interface LimitSubject {
  /** `tools/call:github_get_issue`, `resources/read:schema`, `prompts/get:unknown`. */
  readonly key: string;
  /** What the caller reads in a refusal: the registered name, or `unknown names`. */
  readonly label: string;
  readonly access: 'read' | 'write';
}

/** The abuse limits of the pipeline: rate per principal and tool, concurrency per principal, a global cap. */
export class Limits {
  /** The limiters of each access class, in the shared store and in this process (made on first use). */
  #shared: { read: RateLimiter; write: RateLimiter } | undefined;
  #local: { read: RateLimiter; write: RateLimiter } | undefined;
  readonly #store: SharedLimiterStore | undefined;
  readonly #onStoreFailure: 'memory' | 'closed';
  readonly #perMinute: { read: number; write: number };
  readonly #perPrincipal: number;
  readonly #global: number;
  readonly #running = new Map<string, number>();
  #inflight = 0;

  constructor(
    config: Pick<
      BaseConfig,
      | 'GATEHOUSE_RATE_READ_PER_MIN'
      | 'GATEHOUSE_RATE_WRITE_PER_MIN'
      | 'GATEHOUSE_MAX_CONCURRENT_PER_PRINCIPAL'
      | 'GATEHOUSE_MAX_INFLIGHT'
    >,
    options: { store?: SharedLimiterStore; onStoreFailure?: 'memory' | 'closed' } = {},
  ) {
    this.#store = options.store;
    this.#onStoreFailure = options.onStoreFailure ?? 'memory';
    this.#perMinute = {
      read: config.GATEHOUSE_RATE_READ_PER_MIN,
      write: config.GATEHOUSE_RATE_WRITE_PER_MIN,
    };
    this.#perPrincipal = config.GATEHOUSE_MAX_CONCURRENT_PER_PRINCIPAL;
    this.#global = config.GATEHOUSE_MAX_INFLIGHT;
  }

  /**
   * Takes a slot for a call — the global cap, the principal's concurrency, one place in the
   * minute of `subject` — and returns the release function, or why the call is limited.
   */
  async acquire(principal: Principal, subject: LimitSubject): Promise<(() => void) | Limited> {
    if (this.#inflight >= this.#global) {
      return {
        rule: 'inflight',
        retryAfterSeconds: 1,
        message: 'The server is at capacity. Retry in 1s.',
      };
    }
    const running = this.#running.get(principal.id) ?? 0;
    if (running >= this.#perPrincipal) {
      return {
        rule: 'concurrency',
        retryAfterSeconds: 1,
        message: `Too many calls running at once for ${principal.id} (limit ${this.#perPrincipal}). Wait for one to finish, then retry.`,
      };
    }
    // Take the slots before awaiting the rate limiter, so concurrent calls cannot all pass.
    this.#inflight++;
    this.#running.set(principal.id, running + 1);
    let released = false;
    const release = (): void => {
      if (released) return;
      released = true;
      this.#inflight--;
      const now = (this.#running.get(principal.id) ?? 1) - 1;
      if (now === 0) this.#running.delete(principal.id);
      else this.#running.set(principal.id, now);
    };
    try {
      const limited = await this.charge(principal, subject);
      if (limited === undefined) return release;
      release();
      return limited;
    } catch (error) {
      release();
      throw error;
    }
  }

  /**
   * Counts one call of `subject` against the principal's rate (no concurrency slot): what a call
   * that ends before it runs — an unknown name — still costs. Undefined when it may go on.
   */
  async charge(principal: Principal, subject: LimitSubject): Promise<Limited | undefined> {
    const key = `${principal.id}\u0000${subject.key}`;
    const store = this.#store;
    // The shared store when it answers; when it is down or fails on this very call, the
    // configured fallback: refuse (closed), or count in this process (memory).
    let wait: number | undefined;
    if (store !== undefined && store.healthy()) {
      const limiter = this.#limiters(store)[subject.access];
      wait = await limiter.take(key).catch(() => undefined);
    }
    if (store !== undefined && wait === undefined && this.#onStoreFailure === 'closed') {
      return {
        rule: 'rate_store',
        retryAfterSeconds: 5,
        message: `The shared rate-limit store (${store.name}) is unreachable, and this server refuses calls until it is back. Retry in 5s; tell the operator if it lasts.`,
      };
    }
    const local = this.#limiters(undefined)[subject.access];
    wait ??= await local.take(key);
    if (wait === 0) return undefined;
    const seconds = Math.max(1, Math.ceil(wait / 1000));
    return {
      rule: 'rate',
      retryAfterSeconds: seconds,
      message: `Rate limit reached for ${subject.label} (${subject.access === 'write' ? 'writes' : 'reads'}). Retry in ${seconds}s.`,
    };
  }

  #limiters(store: SharedLimiterStore | undefined): { read: RateLimiter; write: RateLimiter } {
    return store === undefined
      ? (this.#local ??= classes(memoryLimiter, this.#perMinute))
      : (this.#shared ??= classes(store.factory, this.#perMinute));
  }
}
