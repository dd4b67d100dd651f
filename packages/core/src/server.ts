/**
 * The pipeline of docs/architecture.md, wired: a server definition is prepared once, and every SDK `Server`
 * (a stdio connection, or one HTTP request) gets the handlers of `pipeline/`. Every request that
 * acts goes through one runner, `pipeline/runner.ts` — find → visible → audit-failure refusal →
 * parse → targets → outgoing secrets → limits → confirm → run under the deadline → shape →
 * finish — each method supplying an adapter:
 *
 *   tools.ts       tools/list, and the tools/call adapter
 *   resources.ts   resources/templates/list, and the resources/read and resources/list adapters
 *   prompts.ts     prompts/list, and the prompts/get adapter
 *   completion.ts  the completion/complete adapter
 *
 * shared by them: connection.ts (the caller, the handler context, the attempt and its one audit
 * record), audit-record.ts, failures.ts (failure → tool error | JSON-RPC error + audit outcome),
 * confirm.ts (write confirmation), results.ts (dry runs, budgets, structured results),
 * frame-structured.ts (untrusted strings framed in structured content), lifetime.ts (deadline,
 * cancellation, drain) and prepare.ts (what is computed once).
 */
import { sanitizeText } from './sanitize.js';
import { Server } from '@modelcontextprotocol/server';
import type { McpRequestContext } from '@modelcontextprotocol/server';
import type { ServerDefinition } from './define.js';
import { registerCompletion } from './pipeline/completion.js';
import { Connection, createStateCodec } from './pipeline/connection.js';
import { prepareServer } from './pipeline/prepare.js';
import type { PreparedServer } from './pipeline/prepare.js';
import { registerPrompts } from './pipeline/prompts.js';
import { registerResources } from './pipeline/resources.js';
import type { Runtime } from './pipeline/runtime-type.js';
import { registerTools } from './pipeline/tools.js';

export {
  CancelledError,
  DeadlineExceededError,
  InflightTracker,
  ShutdownError,
} from './pipeline/lifetime.js';
export { describeTools } from './pipeline/prepare.js';
export type { Runtime } from './pipeline/runtime-type.js';
export { createScopeLookup } from './pipeline/scope-lookup.js';

const DEFAULT_PAGE_SIZE = 100;

/**
 * Prepares a server definition once and returns the factory the SDK serving entries call:
 * a fresh SDK `Server` per connection (stdio) or per request (HTTP). `prepared` is what it
 * serves (the listing and each tool's definition hash, for the start record).
 */
export function createServerFactory(
  definition: ServerDefinition,
  runtime: Runtime,
): ((ctx: McpRequestContext) => Server) & { readonly prepared: PreparedServer } {
  const prepared = prepareServer(definition, {
    structuredOutput: runtime.structuredOutput ?? false,
  });
  const { capabilities } = prepared;
  const pageSize = runtime.pageSize ?? DEFAULT_PAGE_SIZE;
  const stateCodec = createStateCodec(runtime);
  // Cleaned like every listing string: a server may build them from a file or a catalog.
  const instructions =
    definition.instructions === undefined ? undefined : sanitizeText(definition.instructions).text;

  const factory = (requestContext: McpRequestContext): Server => {
    const server = new Server(prepared.serverInfo, {
      capabilities,
      ...(instructions === undefined ? {} : { instructions }),
      // Echoed requestState is verified before any handler runs; tampering is a -32602.
      requestState: { verify: (state, ctx) => stateCodec.verify(state, ctx) },
    });
    const principal = runtime.principal(requestContext);
    const connection = new Connection(
      server,
      prepared,
      runtime,
      stateCodec,
      principal,
      requestContext.era,
    );
    registerTools(connection, pageSize);
    if (capabilities.resources) registerResources(connection, pageSize);
    if (capabilities.prompts) registerPrompts(connection, pageSize);
    if (capabilities.completions) registerCompletion(connection);
    definition.configure?.(server);
    return server;
  };
  return Object.assign(factory, { prepared });
}
