import type { BaseConfig } from './config.js';
import type { ToolDefinition } from './define.js';
import type { Principal } from './principal.js';

/** Why a call may not start now, and when to try again. */
export interface Limited {
  rule: 'rate' | 'concurrency' | 'inflight' | 'rate_store';
  retryAfterSeconds: number;
  message: string;
}

/** What the pipeline needs of a limiter: consume one point, or reject with `msBeforeNext`. */
export interface RateLimiter {
  consume(key: string): Promise<unknown>;
}

/** Builds the rate limiter for one access class (in process, or rate-limiter-flexible on Redis). */
export type LimiterFactory = (pointsPerMinute: number, name: string) => RateLimiter;

/** The two windows of a per-minute rate, in memory and in Redis alike: a steady share, a burst. */
function windowsOf(perMinute: number) {
  return [
    { points: Math.max(1, Math.ceil(perMinute / 6)), seconds: 10 },
    { points: perMinute, seconds: 60 },
  ] as const;
}

/** Fixed windows per key in this process: a count and when the window ends. */
class Windows {
  readonly #windows = new Map<string, { count: number; endsAt: number }>();
  constructor(
    readonly points: number,
    readonly durationMs: number,
  ) {}

  /** Counts one call (refused ones too, as rate-limiter-flexible does); ms to wait when over. */
  take(key: string, now: number): number {
    let window = this.#windows.get(key);
    if (window === undefined || window.endsAt <= now) {
      // Forget ended windows now and then, so many callers do not grow the map without end.
      if (this.#windows.size >= 10_000) {
        for (const [k, w] of this.#windows) if (w.endsAt <= now) this.#windows.delete(k);
      }
      window = { count: 0, endsAt: now + this.durationMs };
      this.#windows.set(key, window);
    }
    window.count++;
    return window.count <= this.points ? 0 : window.endsAt - now;
  }
}

/**
 * In memory: a steady rate in 10-second windows plus a burst allowance of the per-minute rate —
 * rate-limiter-flexible's BurstyRateLimiter over two RateLimiterMemory, the same counts and
 * waits, written out (a few lines, no timers, no promise per window): a call passes when the
 * 10-second window has room, else when the minute's burst has; a refusal waits for the sooner
 * of the two to end.
 */
export const memoryLimiter: LimiterFactory = (perMinute) => {
  const [steadyWindow, burstWindow] = windowsOf(perMinute);
  const steady = new Windows(steadyWindow.points, steadyWindow.seconds * 1000);
  const burst = new Windows(burstWindow.points, burstWindow.seconds * 1000);
  return {
    consume: (key: string) => {
      const now = Date.now();
      const wait = steady.take(key, now);
      if (wait === 0) return Promise.resolve();
      const burstWait = burst.take(key, now);
      if (burstWait === 0) return Promise.resolve();
      return Promise.reject(new RateRefusal(Math.min(wait, burstWait)));
    },
  };
};

/** One limiter per access class. */
function classes(factory: LimiterFactory, perMinute: { read: number; write: number }) {
  return { read: factory(perMinute.read, 'read'), write: factory(perMinute.write, 'write') };
}

/** An in-process limiter's refusal (rate-limiter-flexible's are RateLimiterRes objects). */
class RateRefusal extends Error {
  constructor(readonly msBeforeNext: number) {
    super(`rate limited for ${msBeforeNext} ms`);
  }
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
 * Redis (ioredis) as the shared store: the same windows as {@link memoryLimiter}, counted in
 * Redis under `gatehouse:<service>:…`, so every replica of a server draws from one budget.
 * Commands fail at once while Redis is unreachable (no offline queue), and the limiter rejects
 * without waiting when the connection is not ready: the caller then applies the configured
 * fallback instead of hanging a call on a dead store. `onChange` hears every up/down transition.
 */
export async function redisLimiterStore(
  url: string,
  service: string,
  onChange: (up: boolean, detail: string) => void,
): Promise<SharedLimiterStore> {
  const [{ Redis }, { BurstyRateLimiter, RateLimiterRedis }] = await Promise.all([
    import('ioredis'),
    import('rate-limiter-flexible'),
  ]);
  const client = new Redis(url, {
    enableOfflineQueue: false,
    maxRetriesPerRequest: 1,
    connectTimeout: 2_000,
    commandTimeout: 1_000,
    // Keep trying, at most every 2 s: the store comes back on its own when Redis does.
    retryStrategy: (attempt) => Math.min(attempt * 200, 2_000),
  });
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
    factory: (perMinute, name) => {
      const [steady, burst] = windowsOf(perMinute).map(
        ({ points, seconds }, i) =>
          new RateLimiterRedis({
            storeClient: client,
            rejectIfRedisNotReady: true,
            points,
            duration: seconds,
            keyPrefix: `${prefix}:${name}${i === 0 ? '' : ':burst'}`,
          }),
      );
      return new BurstyRateLimiter(steady!, burst!);
    },
    close: async () => {
      client.disconnect();
    },
  };
}

/** Stands for a store that is known to be down (no request is sent to it). */
const STORE_DOWN = new Error('the shared rate-limit store is unreachable');

/** A refusal from a limiter: ours, or rate-limiter-flexible's result carrying msBeforeNext. */
function isRefusal(error: unknown): error is { msBeforeNext: number } {
  if (error instanceof RateRefusal) return true;
  return (
    typeof (error as { msBeforeNext?: unknown } | null)?.msBeforeNext === 'number' &&
    !(error instanceof Error)
  );
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

  /** Takes a slot for a call; returns the release function, or why it is limited. */
  async acquire(principal: Principal, tool: ToolDefinition): Promise<(() => void) | Limited> {
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
    const key = `${principal.id}\u0000${tool.name}`;
    const store = this.#store;
    // The shared store when it answers; when it is down or fails on this very call, the
    // configured fallback: refuse (closed), or count in this process (memory).
    let rejection =
      store?.healthy() === false ? STORE_DOWN : await this.#consume(store, tool.access, key);
    if (store !== undefined && rejection !== undefined && !isRefusal(rejection)) {
      if (this.#onStoreFailure === 'closed') {
        release();
        return {
          rule: 'rate_store',
          retryAfterSeconds: 5,
          message: `The shared rate-limit store (${store.name}) is unreachable, and this server refuses calls until it is back. Retry in 5s; tell the operator if it lasts.`,
        };
      }
      rejection = await this.#consume(undefined, tool.access, key);
    }
    if (rejection !== undefined) {
      release();
      if (!isRefusal(rejection))
        throw rejection instanceof Error
          ? rejection
          : new Error('the rate limiter failed', { cause: rejection });
      const seconds = Math.max(1, Math.ceil(rejection.msBeforeNext / 1000));
      return {
        rule: 'rate',
        retryAfterSeconds: seconds,
        message: `Rate limit reached for ${tool.name} (${tool.access === 'write' ? 'writes' : 'reads'}). Retry in ${seconds}s.`,
      };
    }
    return release;
  }

  /** Consumes one point; resolves with the rejection (a refusal or a store error), if any. */
  async #consume(
    store: SharedLimiterStore | undefined,
    access: ToolDefinition['access'],
    key: string,
  ): Promise<unknown> {
    const limiters =
      store === undefined
        ? (this.#local ??= classes(memoryLimiter, this.#perMinute))
        : (this.#shared ??= classes(store.factory, this.#perMinute));
    try {
      await (access === 'write' ? limiters.write : limiters.read).consume(key);
      return undefined;
    } catch (error) {
      return error;
    }
  }
}
