import type { BurstyRateLimiter, RateLimiterAbstract } from 'rate-limiter-flexible';
import type { BaseConfig } from './config.js';
import type { ToolDefinition } from './define.js';
import type { Principal } from './principal.js';

/** Why a call may not start now, and when to try again. */
export interface Limited {
  rule: 'rate' | 'concurrency' | 'inflight';
  retryAfterSeconds: number;
  message: string;
}

/** Builds the rate limiter for one access class (`rate-limiter-flexible`, pluggable store). */
export type LimiterFactory = (
  pointsPerMinute: number,
) => Promise<RateLimiterAbstract | BurstyRateLimiter> | RateLimiterAbstract | BurstyRateLimiter;

/**
 * In memory: a steady rate in 10-second windows plus a burst allowance of the per-minute rate —
 * the behaviour of a token bucket, on rate-limiter-flexible's limiters. A shared store (Redis)
 * for many replicas plugs in here. (Loaded on the first call, not at start.)
 */
export const memoryLimiter: LimiterFactory = async (perMinute) => {
  const { BurstyRateLimiter, RateLimiterMemory } = await import('rate-limiter-flexible');
  return new BurstyRateLimiter(
    new RateLimiterMemory({ points: Math.max(1, Math.ceil(perMinute / 6)), duration: 10 }),
    new RateLimiterMemory({ points: perMinute, duration: 60, keyPrefix: 'burst' }),
  );
};

/** A refusal from a limiter: rate-limiter-flexible rejects with a result carrying msBeforeNext. */
function isRefusal(error: unknown): error is { msBeforeNext: number } {
  return (
    typeof (error as { msBeforeNext?: unknown } | null)?.msBeforeNext === 'number' &&
    !(error instanceof Error)
  );
}

/** The abuse limits of the pipeline: rate per principal and tool, concurrency per principal, a global cap. */
export class Limits {
  #limiters:
    | Promise<{
        read: RateLimiterAbstract | BurstyRateLimiter;
        write: RateLimiterAbstract | BurstyRateLimiter;
      }>
    | undefined;
  readonly #factory: LimiterFactory;
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
    factory: LimiterFactory = memoryLimiter,
  ) {
    this.#factory = factory;
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
    this.#limiters ??= (async () => ({
      read: await this.#factory(this.#perMinute.read),
      write: await this.#factory(this.#perMinute.write),
    }))();
    const limiters = await this.#limiters;
    const limiter = tool.access === 'write' ? limiters.write : limiters.read;
    try {
      await limiter.consume(`${principal.id}\u0000${tool.name}`);
    } catch (error) {
      release();
      if (!isRefusal(error)) throw error;
      const seconds = Math.max(1, Math.ceil(error.msBeforeNext / 1000));
      return {
        rule: 'rate',
        retryAfterSeconds: seconds,
        message: `Rate limit reached for ${tool.name} (${tool.access === 'write' ? 'writes' : 'reads'}). Retry in ${seconds}s.`,
      };
    }
    return release;
  }
}
