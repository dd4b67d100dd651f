/** Files only their owner may read (the vault's key file, its grant file): ADR 0026. */
import { readFileSync, statSync } from 'node:fs';
import { ConfigError } from '../errors.js';

/**
 * The text of a file that group and others cannot read — refused otherwise, as ssh refuses such
 * a key — or undefined when it does not exist and `missing` is `empty`. Problems name the
 * variable and the path, in the one configuration voice; never what the file holds.
 */
export function privateFileText(
  path: string,
  variable: string,
  missing: 'refuse' | 'empty',
): string | undefined {
  try {
    const mode = statSync(path).mode;
    if ((mode & 0o077) !== 0) {
      throw new ConfigError([
        `${variable}: ${path} is readable by others (mode ${(mode & 0o777).toString(8)}); chmod 600 it`,
      ]);
    }
    return readFileSync(path, 'utf8');
  } catch (error) {
    if (error instanceof ConfigError) throw error;
    const code = (error as NodeJS.ErrnoException).code;
    if (code === 'ENOENT' && missing === 'empty') return undefined;
    throw new ConfigError([`${variable}: cannot read ${path} (${code ?? 'error'})`]);
  }
}
