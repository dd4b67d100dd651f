import { readFileSync } from 'node:fs';
import { ConfigError } from '@gatehouse/core';
import { parse as parseYaml } from 'yaml';

/**
 * An operator's YAML (or JSON) file, read at start: its bytes (for the start record's SHA-256)
 * and its document. An unreadable file or invalid YAML is a ConfigError naming the variable and
 * the file (`problem` words it).
 */
export function readYamlFile(
  file: string,
  problem: (text: string) => string,
): { bytes: Buffer; doc: unknown } {
  let bytes: Buffer;
  try {
    bytes = readFileSync(file);
  } catch (error) {
    throw new ConfigError([problem(`cannot be read (${(error as NodeJS.ErrnoException).code})`)]);
  }
  try {
    return {
      bytes,
      doc: parseYaml(bytes.toString('utf8'), { prettyErrors: true, uniqueKeys: true }) as unknown,
    };
  } catch (error) {
    throw new ConfigError([problem(`not valid YAML: ${(error as Error).message.split('\n')[0]}`)]);
  }
}
