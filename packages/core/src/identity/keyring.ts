/**
 * The vault's keys (ADR 0026): AES-256-GCM keys read from the operator's secret file, each with
 * an id so that a key can be rotated without losing what the old one sealed. The first key seals;
 * every key opens what it sealed.
 *
 * A sealed record is bound to its owner by additional authenticated data that the record does
 * not hold: whoever opens it must name the owner, and a record copied under another owner does
 * not open (GCM's tag covers the data it was sealed with).
 */
import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto';
import { ConfigError } from '../errors.js';
import { privateFileText } from './private-file.js';

/** The format's tag: `g1.<key id>.<iv>.<ciphertext>.<tag>`, base64url. */
const FORMAT = 'g1';
const KEY_BYTES = 32;
const IV_BYTES = 12;
const KEY_ID = /^[A-Za-z0-9_-]{1,64}$/;

/** What the record says of how it was sealed, before it is opened. */
export interface Sealed {
  readonly keyId: string;
}

export class Keyring {
  readonly #keys: ReadonlyMap<string, Buffer>;
  /** The id of the key that seals. */
  readonly current: string;

  private constructor(keys: ReadonlyMap<string, Buffer>, current: string) {
    this.#keys = keys;
    this.current = current;
  }

  /**
   * Reads the key file named by `variable`: one key a line, `<id> <32 bytes in base64>`, `#`
   * comments and blank lines ignored, the first key the one that seals. The file must not be
   * readable by group or others. Problems name the file, the line and the variable, never a key.
   */
  static fromFile(path: string, variable: string): Keyring {
    const text = privateFileText(path, variable, 'refuse')!;
    return Keyring.parse(text, `${variable} (${path})`);
  }

  /** Parses a key file's text; `source` names it in problems. */
  static parse(text: string, source: string): Keyring {
    const keys = new Map<string, Buffer>();
    const problems: string[] = [];
    let current: string | undefined;
    text.split(/\r?\n/).forEach((raw, index) => {
      const line = raw.trim();
      if (line === '' || line.startsWith('#')) return;
      const where = `${source}, line ${index + 1}`;
      const [id, material, ...rest] = line.split(/\s+/);
      if (id === undefined || material === undefined || rest.length > 0 || !KEY_ID.test(id)) {
        problems.push(`${where}: expected "<key id> <base64 key>" (id: letters, digits, _ or -)`);
        return;
      }
      const key = Buffer.from(material, 'base64');
      if (key.length !== KEY_BYTES || !/^[A-Za-z0-9+/]+={0,2}$/.test(material)) {
        problems.push(
          // Neither part is quoted: a line written the wrong way round holds the key first.
          `${where}: the key is not ${KEY_BYTES} bytes in base64 (make one with: openssl rand -base64 32)`,
        );
        return;
      }
      if (keys.has(id)) {
        problems.push(`${where}: its key id appears on an earlier line too`);
        return;
      }
      keys.set(id, key);
      current ??= id;
    });
    if (problems.length > 0) throw new ConfigError(problems);
    if (current === undefined) throw new ConfigError([`${source}: holds no key`]);
    return new Keyring(keys, current);
  }

  /** Seals `plaintext` under the current key, bound to `owner` (not stored in the record). */
  seal(plaintext: string, owner: string): string {
    const iv = randomBytes(IV_BYTES);
    const cipher = createCipheriv('aes-256-gcm', this.#keys.get(this.current)!, iv);
    cipher.setAAD(Buffer.from(owner, 'utf8'));
    const body = Buffer.concat([cipher.update(plaintext, 'utf8'), cipher.final()]);
    return [FORMAT, this.current, iv, body, cipher.getAuthTag()]
      .map((part) => (typeof part === 'string' ? part : part.toString('base64url')))
      .join('.');
  }

  /** How a record was sealed, or undefined when it is not one of ours. */
  static inspect(record: string): Sealed | undefined {
    const parts = record.split('.');
    if (parts.length !== 5 || parts[0] !== FORMAT || !KEY_ID.test(parts[1]!)) return undefined;
    return { keyId: parts[1]! };
  }

  /**
   * Opens a record sealed for `owner`; undefined when it does not open — another owner's, a key
   * this ring no longer holds, or altered. (Which of these is not said: none of them is the
   * caller's to know.)
   */
  open(record: string, owner: string): string | undefined {
    const sealed = Keyring.inspect(record);
    const key = sealed === undefined ? undefined : this.#keys.get(sealed.keyId);
    if (key === undefined) return undefined;
    const [, , iv, body, tag] = record.split('.').map((p) => Buffer.from(p, 'base64url'));
    if (iv!.length !== IV_BYTES || tag!.length !== 16) return undefined;
    try {
      const decipher = createDecipheriv('aes-256-gcm', key, iv!);
      decipher.setAAD(Buffer.from(owner, 'utf8'));
      decipher.setAuthTag(tag!);
      return Buffer.concat([decipher.update(body!), decipher.final()]).toString('utf8');
    } catch {
      return undefined;
    }
  }
}
