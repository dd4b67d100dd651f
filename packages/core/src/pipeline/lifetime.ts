/**
 * How long a call may live: the per-call deadline, client cancellation, and the drain at
 * shutdown. Each ends a call with a typed reason the failure classifier understands.
 */

/** Counts in-flight calls and aborts them when a drain deadline passes. */
export class InflightTracker {
  #count = 0;
  #waiters: Array<() => void> = [];
  readonly #shutdown = new AbortController();

  /** Aborted when shutdown gives up on in-flight calls. */
  get signal(): AbortSignal {
    return this.#shutdown.signal;
  }

  get count(): number {
    return this.#count;
  }

  /** Marks a call as started; the returned function marks it finished. */
  enter(): () => void {
    this.#count++;
    let done = false;
    return () => {
      if (done) return;
      done = true;
      this.#count--;
      if (this.#count === 0) for (const w of this.#waiters.splice(0)) w();
    };
  }

  /** Resolves true once nothing is in flight, or false when `ms` passes first. */
  async idle(ms: number): Promise<boolean> {
    if (this.#count === 0) return true;
    return new Promise((resolve) => {
      const timer = setTimeout(() => resolve(false), ms);
      this.#waiters.push(() => {
        clearTimeout(timer);
        resolve(true);
      });
    });
  }

  /** Aborts every in-flight call (after a drain deadline). */
  abortAll(): void {
    this.#shutdown.abort(new ShutdownError());
  }
}

/** The per-call deadline passed. */
export class DeadlineExceededError extends Error {
  override readonly name = 'DeadlineExceededError';
  readonly code = 'deadline_exceeded';
  constructor(readonly ms: number) {
    super(`deadline of ${ms} ms exceeded`);
  }
}

/** The client cancelled the request. */
export class CancelledError extends Error {
  override readonly name = 'CancelledError';
  readonly code = 'cancelled';
  constructor() {
    super('cancelled by the client');
  }
}

/** The server stopped waiting for the call during shutdown. */
export class ShutdownError extends Error {
  override readonly name = 'ShutdownError';
  readonly code = 'shutdown';
  constructor() {
    super('the server is shutting down');
  }
}

/**
 * Runs `work` under a deadline and the given abort sources, and rejects with the reason as soon
 * as any fires (a handler that ignores its signal is not waited for). The signal the handler
 * sees carries a typed reason: DeadlineExceededError, CancelledError or ShutdownError.
 */
export async function withDeadline<T>(
  ms: number,
  sources: { cancel: AbortSignal; shutdown?: AbortSignal | undefined },
  work: (signal: AbortSignal) => Promise<T>,
): Promise<T> {
  const controller = new AbortController();
  const timer = setTimeout(() => controller.abort(new DeadlineExceededError(ms)), ms);
  const onCancel = (): void => controller.abort(new CancelledError());
  const onShutdown = (): void => controller.abort(new ShutdownError());
  if (sources.cancel.aborted) onCancel();
  else sources.cancel.addEventListener('abort', onCancel, { once: true });
  if (sources.shutdown?.aborted) onShutdown();
  else sources.shutdown?.addEventListener('abort', onShutdown, { once: true });
  const signal = controller.signal;
  let onAbort: (() => void) | undefined;
  const aborted = new Promise<never>((_, reject) => {
    onAbort = () => reject(signal.reason as Error);
    if (signal.aborted) onAbort();
    else signal.addEventListener('abort', onAbort, { once: true });
  });
  try {
    return await Promise.race([work(signal), aborted]);
  } finally {
    clearTimeout(timer);
    sources.cancel.removeEventListener('abort', onCancel);
    sources.shutdown?.removeEventListener('abort', onShutdown);
    if (onAbort) signal.removeEventListener('abort', onAbort);
    // The race may have settled through `work`; the losing rejection must not go unhandled.
    aborted.catch(() => undefined);
  }
}

/**
 * Marks a call finished only after the SDK has written its response: the SDK sends it in the
 * microtasks that follow the handler, so a drain that waits for the counter never closes the
 * transport between a finished handler and its answer.
 */
export function releaseAfterResponse(done: (() => void) | undefined): void {
  if (done) setImmediate(done);
}
