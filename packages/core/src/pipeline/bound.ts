/**
 * Bound tool parameters (ToolDefinition `bound`): values that are the caller's — its id, a claim
 * of its credential — resolved from the principal the transport established, never from the
 * request. A call that names one among its arguments, in any spelling, is refused by name; a
 * caller whose credential does not carry the value, or carries one that does not fit, is refused
 * without anything run. The record keeps each value's SHA-256 (audit-record.ts).
 */
import type { BoundParameter } from '../define.js';
import type { Principal } from '../principal.js';
import { Refusal } from './failures.js';

/** A key as compared with a bound name: compatibility-folded, lower case, letters and digits. */
const fold = (key: string): string =>
  key
    .normalize('NFKC')
    .toLowerCase()
    .replace(/[^\p{L}\p{N}]/gu, '');

/** How a source reads in a refusal: "id", "email claim". */
const source = (from: string): string =>
  from === 'principal' ? 'id' : `${from.slice('claim:'.length)} claim`;

/** Refuses arguments that name a bound parameter — as written, or in another case or spelling. */
export function refuseBoundArguments(
  tool: string,
  bound: readonly BoundParameter[],
  given: Readonly<Record<string, unknown>>,
): void {
  const names = new Map(bound.map((b) => [fold(b.name), b]));
  for (const key of Object.keys(given)) {
    const hit = names.get(fold(key));
    if (hit !== undefined) {
      throw new Refusal(
        'invalid_params',
        `Invalid arguments for ${tool}: ${hit.name} is taken from the caller (its ${source(hit.from)}) and cannot be given. Call again without it.`,
      );
    }
  }
}

/** The caller's values of a tool's bound parameters: as read (for the record) and as checked. */
export function resolveBound(
  tool: string,
  bound: readonly BoundParameter[],
  principal: Principal,
): { raw: Readonly<Record<string, string>>; values: Readonly<Record<string, unknown>> } {
  const raw: Array<[string, string]> = [];
  const values: Array<[string, unknown]> = [];
  for (const b of bound) {
    const claim = b.from.startsWith('claim:') ? b.from.slice('claim:'.length) : undefined;
    const value =
      b.from === 'principal'
        ? principal.id
        : claim !== undefined &&
            principal.claims !== undefined &&
            Object.hasOwn(principal.claims, claim)
          ? principal.claims[claim]
          : undefined;
    const refuse = (why: string): never => {
      const reason = `${tool} answers for the caller's ${source(b.from)} (${b.name}), and ${why}`;
      throw new Refusal('denied', `Refused: ${reason}. Nothing was run.`, {
        allow: false,
        rule: 'bound_parameter',
        reason,
      });
    };
    if (value === undefined) refuse("this caller's credential does not carry one");
    let checked: unknown = value;
    if (b.check !== undefined) {
      try {
        checked = b.check(value!);
      } catch {
        refuse("this caller's value does not fit the parameter");
      }
    }
    raw.push([b.name, value!]);
    values.push([b.name, checked]);
  }
  return { raw: Object.fromEntries(raw), values: Object.freeze(Object.fromEntries(values)) };
}
