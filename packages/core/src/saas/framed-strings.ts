/**
 * A vendor's JSON, as a resource shows it, with every string its users wrote framed — value by
 * value, with the call's markers (`ctx.untrustedValue`) — but those under `own` keys: the
 * vendor's ids, kinds, colours, states and dates, and the server's own fields (docs/security.md:
 * every vendor-written string is inside a frame, or of a closed set checked against the vendor's
 * documented format).
 */
export function framedStrings(
  value: unknown,
  frame: (text: string) => string,
  own: ReadonlySet<string>,
): unknown {
  if (typeof value === 'string') return frame(value);
  if (Array.isArray(value)) return value.map((item) => framedStrings(item, frame, own));
  if (value !== null && typeof value === 'object') {
    return Object.fromEntries(
      Object.entries(value).map(([key, inner]) => [
        key,
        own.has(key) ? inner : framedStrings(inner, frame, own),
      ]),
    );
  }
  return value;
}
