/**
 * Runs a server's start-up check and owns its outcomes (see `StartupCheck` in define.ts):
 * refused credentials stop the start naming the variable, an unreachable upstream starts the
 * server unready and /readyz checks again, warnings are logged.
 */
import type { ReadyResult, ServerDefinition } from './define.js';
import { ConfigError, CredentialError, UpstreamError } from './errors.js';
import type { Logger } from './logger.js';

/** The readiness of a started server: the start-up check first, then the server's own. */
export type Readiness = () => Promise<ReadyResult>;

const DEFAULT_RECHECK_MS = 5_000;

/**
 * Runs `definition.startup` (if any). Throws a ConfigError for refused credentials (after closing
 * the definition); resolves with the readiness /readyz serves.
 */
export async function checkAtStart(
  definition: ServerDefinition,
  logger: Logger,
): Promise<Readiness> {
  const own: Readiness = definition.ready ?? (async () => ({ ready: true }));
  const startup = definition.startup;
  if (startup === undefined) return own;
  const run = async (): Promise<void> => {
    const report = await startup.check();
    logger.info(report.details ?? {}, report.message);
    for (const warning of report.warnings ?? [])
      logger.warn({ upstream: startup.upstream }, warning);
  };
  try {
    await run();
    return own;
  } catch (error) {
    if (error instanceof UpstreamError) {
      logger.warn(
        { err: error.cause ?? error },
        `${startup.upstream} is unreachable; starting unready`,
      );
    } else {
      await definition.close?.();
      if (error instanceof CredentialError) {
        throw new ConfigError([`${error.variable}: ${error.message}`]);
      }
      throw error;
    }
  }
  const unreachable: ReadyResult = { ready: false, detail: `${startup.upstream} is unreachable` };
  let passed = false;
  let last = Date.now();
  return async () => {
    if (passed) return own();
    if (Date.now() - last < (startup.recheckMs ?? DEFAULT_RECHECK_MS)) return unreachable;
    last = Date.now();
    try {
      await run();
      passed = true;
      return await own();
    } catch (error) {
      if (error instanceof CredentialError) {
        logger.error({ variable: error.variable }, error.message);
        return {
          ready: false,
          detail: `${startup.upstream} refused the credentials (${error.variable})`,
        };
      }
      return unreachable;
    }
  };
}
