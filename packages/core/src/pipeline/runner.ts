/**
 * The one runner every request that acts goes through — tools/call, resources/read,
 * prompts/get, completion/complete, and resources/list when a template lists (it reaches a
 * database or a vendor) — in one order a reader can check:
 *
 *   find → visible → audit-failure refusal → parse → targets → outgoing secrets → limits →
 *   confirm → run under the deadline → shape → finish
 *
 * A method supplies an {@link Adapter}: how to find what the request names, how to parse its
 * arguments, how to run and shape it, and how it answers a failure (a tool error, or a JSON-RPC
 * error). Every early exit is a {@link Refusal}, a row of the one failure table (failures.ts),
 * and every exit writes exactly one audit record.
 */
import type { OutcomeReason } from '@gatehouse/audit';
import type { ServerContext } from '@modelcontextprotocol/server';
import type { Decision } from '../policy.js';
import type { SanitizeFlag } from '../sanitize.js';
import { secretKinds } from '../secrets.js';
import type { Attempt, Connection } from './connection.js';
import type { RecordOutcome } from './audit-record.js';
import { Refusal } from './failures.js';
import type { Failure, Method } from './failures.js';
import { releaseAfterResponse, withDeadline } from './lifetime.js';
import type { PreparedTool } from './prepare.js';

/** What a request names, once found: what policy, limits, spans and the record see of it. */
export interface Subject<A> {
  /** The registered name: metric label, span name, limit key. Never the caller's spelling. */
  readonly label: string;
  readonly access: 'read' | 'write';
  readonly tool?: PreparedTool;
  readonly deadlineMs: number;
  /** Listed exactly when callable: the same decision as the listing's. */
  visible(): Decision;
  /** The arguments as the handler takes them; throws a Refusal (`invalid_params`). */
  parse(): A;
  /** What the request acts on, as policy and audit see it; may throw a PolicyError. */
  targets(args: A): string | readonly string[] | undefined;
  /** The caller's values of bound parameters (tools), which the record keeps as hashes. */
  bound?(args: A): Readonly<Record<string, string>> | undefined;
}

/** What the handler stage hands the adapter's `run`. */
export interface Call {
  readonly attempt: Attempt;
  readonly signal: AbortSignal;
  readonly deadline: number;
  /** What the sanitiser did to the answer (recorded). */
  readonly flags: Set<SanitizeFlag>;
}

/** An answer that replaces running: the question to the user, or a refusal to confirm. */
export interface Gate<Answer> {
  readonly reason: OutcomeReason;
  readonly decision: Decision;
  readonly result: unknown;
  readonly answer: Answer;
}

/** One method's part: everything the runner does not know about it. */
export interface Adapter<A, R, Answer> {
  readonly method: Method;
  /** What the caller asked for as sent (the record keeps it, sanitised): a name or a URI. */
  readonly name: string;
  /** The arguments as sent, for the record (shape and hash only). */
  readonly args?: unknown;
  /** The thing the request names; undefined when there is none. May throw a Refusal. */
  find(): Subject<A> | undefined;
  /** The text of the answer to a name that is not there (or not for this caller). */
  notFound(): string;
  /** Write confirmation (tools): an answer instead of running, or undefined to run. */
  confirm?(
    subject: Subject<A>,
    args: A,
    decision: Decision,
    attempt: Attempt,
  ): Promise<Gate<Answer> | undefined>;
  run(subject: Subject<A>, args: A, call: Call): Promise<R>;
  /** The answer to the handler's result and what the record keeps of it. */
  shape(
    subject: Subject<A>,
    raw: R,
    args: A,
    flags: Set<SanitizeFlag>,
  ): { reason: OutcomeReason; result: unknown; answer: Answer };
  /** How a failure is answered: a tool error, or its JSON-RPC error (thrown). */
  answer(failure: Failure): Answer;
}

/** A name that is not there, or not for this caller, is counted under one key per method. */
const unknownSubject = (method: Method) =>
  ({ key: `${method}:unknown`, label: 'unknown names', access: 'read' }) as const;

function targetList(declared: string | readonly string[] | undefined): readonly string[] {
  return declared === undefined ? [] : typeof declared === 'string' ? [declared] : declared;
}

export async function runRequest<A, R, Answer>(
  connection: Connection,
  sctx: ServerContext,
  adapter: Adapter<A, R, Answer>,
): Promise<Answer> {
  const { runtime, principal } = connection;
  const { method } = adapter;
  let subject: Subject<A> | undefined;
  // Found before the attempt begins: its label is what the attempt's span and metrics carry.
  let findError: Error | undefined;
  try {
    subject = adapter.find();
  } catch (error) {
    findError = error instanceof Error ? error : new Error(String(error));
  }
  const attempt = connection.begin(
    sctx,
    method,
    adapter.name,
    subject?.label ?? 'unknown',
    adapter.args,
  );
  attempt.tool = subject?.tool;
  const outcome: RecordOutcome = {};
  const flags = new Set<SanitizeFlag>();
  let release: (() => void) | undefined;
  let done: (() => void) | undefined;
  try {
    // find → visible. A name that is not there and one this caller may not see are answered
    // alike, and both take a place in the minute like any call.
    if (findError !== undefined) throw findError;
    const decision = subject?.visible();
    if (subject === undefined || decision?.allow !== true) {
      const limited = await runtime.limits?.charge(principal, unknownSubject(method));
      if (limited !== undefined) throw rateRefusal(limited);
      throw new Refusal(
        subject === undefined ? 'not_found' : 'hidden',
        adapter.notFound(),
        decision,
      );
    }
    outcome.decision = decision;
    const unavailable = auditRefusal(connection, subject.access);
    if (unavailable !== undefined) throw new Refusal('audit_unavailable', unavailable, decision);
    const args = subject.parse();
    attempt.bound = subject.bound?.(args);
    const targets = targetList(subject.targets(args));
    if (targets.length > 0) outcome.target = targets.join(' ');
    for (const target of targets) connection.checkTarget(target);
    // A write never carries a secret out (a token, a key, a configured secret's value).
    const secrets = subject.access === 'write' ? secretKinds(args) : [];
    if (secrets.length > 0) {
      const text = `Refused: the arguments of ${subject.label} carry what looks like a secret (${secrets.join(', ')}). Nothing was sent; remove it and call again.`;
      throw new Refusal('denied', text, { allow: false, rule: 'outgoing_secret', reason: text });
    }
    attempt.trace.stage('rate_limit');
    const slot = await runtime.limits?.acquire(principal, {
      key: `${method}:${subject.label}`,
      label: subject.label,
      access: subject.access,
    });
    if (slot !== undefined && typeof slot !== 'function') throw rateRefusal(slot);
    release = slot;
    done = runtime.inflight?.enter();
    if (adapter.confirm !== undefined) {
      const gate = await adapter.confirm(subject, args, decision, attempt);
      if (gate !== undefined) {
        attempt.finish(gate.reason, { ...outcome, decision: gate.decision, result: gate.result });
        return gate.answer;
      }
    }
    attempt.trace.stage('handler');
    const { deadlineMs } = subject;
    const deadline = Date.now() + deadlineMs;
    const found = subject;
    const raw = await attempt.trace.within(() =>
      withDeadline(deadlineMs, connection.abortSources(sctx), (signal) =>
        adapter.run(found, args, { attempt, signal, deadline, flags }),
      ),
    );
    attempt.trace.stage('result');
    const shaped = adapter.shape(subject, raw, args, flags);
    attempt.finish(shaped.reason, { ...outcome, flags, result: shaped.result });
    return shaped.answer;
  } catch (error) {
    return adapter.answer(attempt.fail(error, { ...outcome, flags }));
  } finally {
    release?.();
    releaseAfterResponse(done);
  }
}

function rateRefusal(limited: { rule: string; message: string; retryAfterSeconds: number }) {
  return new Refusal(
    'rate_limited',
    limited.message,
    { allow: false, rule: limited.rule, reason: limited.message },
    { retryAfterSeconds: limited.retryAfterSeconds },
  );
}

/** Why requests are refused while the audit trail cannot be written, if they are. */
function auditRefusal(connection: Connection, access: 'read' | 'write'): string | undefined {
  const { audit, auditFailureMode: mode = 'refuse_writes' } = connection.runtime;
  if (audit.failures.size === 0 || mode === 'continue') return undefined;
  if (mode === 'refuse_writes' && access !== 'write') return undefined;
  const [sink, error] = [...audit.failures.entries()][0]!;
  const code = (error as NodeJS.ErrnoException).code ?? error.name;
  return `Refused: the audit trail cannot be written (${sink}: ${code}), so ${mode === 'refuse_all' ? 'no request is served' : 'write tools are disabled'} until it recovers. Nothing was changed; tell the operator.`;
}
