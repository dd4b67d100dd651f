/**
 * What the start-up check says beside a problem, never repeating a secret (docs/configuration.md,
 * "When a server refuses to start"): the variable the operator probably meant, and whether a
 * secret is still an example's placeholder or pasted with its wrapping.
 */

/** Edit distance between two names (insertions, deletions, substitutions). */
function distance(a: string, b: string): number {
  let previous = Array.from({ length: b.length + 1 }, (_, i) => i);
  for (let i = 1; i <= a.length; i++) {
    const current = [i];
    for (let j = 1; j <= b.length; j++) {
      current[j] = Math.min(
        previous[j]! + 1,
        current[j - 1]! + 1,
        previous[j - 1]! + (a[i - 1] === b[j - 1] ? 0 : 1),
      );
    }
    previous = current;
  }
  return previous[b.length]!;
}

/** Whether `name` is near enough to `key` to be a misspelling of it. */
function near(name: string, key: string): boolean {
  return distance(name, key) <= Math.max(2, Math.floor(key.length / 4));
}

/** The known name closest to `name`, when one is near. */
export function closest(name: string, known: readonly string[]): string | undefined {
  let best: { key: string; d: number } | undefined;
  for (const key of known) {
    const d = distance(name, key);
    if (best === undefined || d < best.d) best = { key, d };
  }
  return best !== undefined && near(name, best.key) ? best.key : undefined;
}

/**
 * Variables of the environment that were probably meant for `key`: its aliases (the names other
 * tools use, `GH_TOKEN`) and near misspellings (`POSTGRES_URI`), known keys excepted.
 */
export function meantFor(
  key: string,
  env: Readonly<Record<string, string | undefined>>,
  known: ReadonlySet<string>,
  aliases: readonly string[],
): string[] {
  return Object.keys(env)
    .filter((name) => env[name] !== undefined && env[name] !== '' && !known.has(name))
    .filter((name) => {
      const bare = name.replace(/_FILE$/, '');
      return aliases.includes(bare) || near(bare, key);
    })
    .sort();
}

/** The placeholders of examples and templates (the example overlay's `REPLACE-ME…`). */
const PLACEHOLDER =
  /REPLACE[-_ ]?ME|CHANGE[-_ ]?ME|^<[^<>]*>$|^(?:x{6,}|\*{6,}|\.{3}|TODO|changeit)$/i;

/**
 * What is wrong with a secret's value as written, in words that never contain it: a placeholder
 * left from an example, quotes kept from a shell line, an `Authorization` scheme pasted with it.
 */
export function secretValueProblem(value: string): string | undefined {
  if (PLACEHOLDER.test(value))
    return 'still a placeholder from an example (REPLACE-ME or similar): set the real value';
  if (/^(["']).*\1$/s.test(value))
    return 'the value is wrapped in quotes: set it without them (a Compose or Kubernetes secret keeps quotes as part of the value)';
  if (/^(?:Bearer|Basic|token)\s/i.test(value))
    return 'the value starts with an authorization scheme (Bearer …): set the token alone';
  if (!value.includes('\n') && value.trim() !== value)
    return 'the value starts or ends with spaces: set it without them';
  return undefined;
}
