// The vault of delegated grants (ADR 0026), against a real Redis and a real file: a grant opens
// only for its owner, a store holds nothing in the clear, keys rotate, bad key files are named.
import { randomBytes } from 'node:crypto';
import { chmodSync, mkdtempSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startRedis } from '@gatehouse/testkit';
import type { TestRedis } from '@gatehouse/testkit';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Keyring, Vault, fileGrantStore, redisGrantStore } from '../src/identity/index.js';
import type { Grant, GrantOwner, GrantStore } from '../src/identity/index.js';
import { ConfigError } from '../src/errors.js';

const key = () => randomBytes(32).toString('base64');
const dir = () => mkdtempSync(join(tmpdir(), 'gatehouse-vault-'));

function keyFile(lines: string[]): string {
  const path = join(dir(), 'vault.keys');
  writeFileSync(path, `${lines.join('\n')}\n`, { mode: 0o600 });
  return path;
}

const alice: GrantOwner = {
  server: 'gatehouse-github',
  issuer: 'https://idp.example.com',
  subject: 'alice',
  upstream: 'github.com',
};
const bob: GrantOwner = { ...alice, subject: 'bob' };

const grantOf = (login: string): Grant => ({
  accessToken: `ghu_${login}_${randomBytes(12).toString('hex')}`,
  refreshToken: `ghr_${login}_${randomBytes(12).toString('hex')}`,
  expiresAt: Date.now() + 8 * 3600_000,
  account: { login, id: String(login.length * 1000) },
  obtainedAt: Date.now(),
});

let redis: TestRedis;
beforeAll(async () => {
  redis = await startRedis();
});
afterAll(async () => {
  await redis.stop();
});

/** Every key and value Redis holds, as text. */
async function redisDump(): Promise<string> {
  const client = new Redis(redis.url);
  try {
    const keys = await client.keys('*');
    const values = await Promise.all(keys.map((k) => client.get(k)));
    return JSON.stringify({ keys, values });
  } finally {
    client.disconnect();
  }
}

const stores: Array<[string, () => Promise<{ store: GrantStore; raw: () => Promise<string> }>]> = [
  [
    'a file',
    async () => {
      const path = join(dir(), 'grants.json');
      return {
        store: fileGrantStore(path, 'GATEHOUSE_VAULT_FILE'),
        raw: async () => readFileSync(path, 'utf8'),
      };
    },
  ],
  [
    'Redis',
    async () => ({
      store: redisGrantStore(redis.url, `vault-${randomBytes(4).toString('hex')}`),
      raw: redisDump,
    }),
  ],
];

describe.each(stores)('a vault in %s', (_name, open) => {
  it('gives each owner their own grant back, and nothing to anyone else', async () => {
    const { store } = await open();
    const vault = new Vault(Keyring.parse(`k1 ${key()}`, 'test'), store);
    const a = grantOf('alice-gh');
    await vault.put(alice, a);
    expect(await vault.get(alice)).toEqual(a);
    expect(await vault.get(bob)).toBeUndefined();
    expect(await vault.get({ ...alice, upstream: 'ghe.example.com' })).toBeUndefined();
    expect(await vault.get({ ...alice, server: 'gatehouse-jira' })).toBeUndefined();
    expect(await vault.get({ ...alice, issuer: 'https://other-idp.example.com' })).toBeUndefined();
    expect(await vault.delete(alice)).toBe(true);
    expect(await vault.get(alice)).toBeUndefined();
    expect(await vault.delete(alice)).toBe(false);
    await vault.close();
  });

  it('holds no token, no refresh token and no name in the clear', async () => {
    const { store, raw } = await open();
    const vault = new Vault(Keyring.parse(`k1 ${key()}`, 'test'), store);
    const a = grantOf('alice-gh');
    const b = grantOf('bob-gh');
    await vault.put(alice, a);
    await vault.put(bob, b);
    const dump = await raw();
    for (const secret of [a.accessToken, a.refreshToken!, b.accessToken, b.refreshToken!]) {
      expect(dump).not.toContain(secret);
      expect(dump).not.toContain(secret.slice(4, 20)); // not even a part of one
    }
    // Sealed records and hashed keys are long runs of base64url, in which a three-letter name
    // turns up by chance (about one dump in a hundred held "bob"): a name in the clear is one
    // outside them.
    const clear = dump.replace(/[A-Za-z0-9_-]{16,}/g, '…');
    expect(clear.length).toBeLessThan(dump.length / 4);
    for (const name of ['alice', 'bob', 'idp.example.com', 'github.com']) {
      expect(clear).not.toContain(name);
    }
    await vault.close();
  });

  it('does not open a record moved under another owner, or altered by a single bit', async () => {
    const { store } = await open();
    const vault = new Vault(Keyring.parse(`k1 ${key()}`, 'test'), store);
    await vault.put(alice, grantOf('alice-gh'));
    const record = (await store.get(Vault.keyOf(alice)))!;
    // Copied where bob's grant would be: it names the same key, and does not open for bob.
    await store.set(Vault.keyOf(bob), record);
    expect(await vault.get(bob)).toBeUndefined();
    // Every part of the record altered: none opens.
    const parts = record.split('.');
    for (let i = 2; i < parts.length; i++) {
      const bytes = Buffer.from(parts[i]!, 'base64url');
      bytes[bytes.length - 1]! ^= 1;
      const altered = parts.with(i, bytes.toString('base64url')).join('.');
      await store.set(Vault.keyOf(alice), altered);
      expect(await vault.get(alice)).toBeUndefined();
    }
    await vault.close();
  });
});

describe('rotating the vault key', () => {
  it('opens what an older key sealed, seals it again under the new one, and drops a retired key', async () => {
    const store = fileGrantStore(join(dir(), 'grants.json'), 'GATEHOUSE_VAULT_FILE');
    const [old, next] = [key(), key()];
    const a = grantOf('alice-gh');
    await new Vault(Keyring.parse(`k1 ${old}`, 'test'), store).put(alice, a);
    expect(Keyring.inspect((await store.get(Vault.keyOf(alice)))!)?.keyId).toBe('k1');

    // The new key first (it seals), the old one kept (it opens).
    const rotated = new Vault(Keyring.parse(`k2 ${next}\nk1 ${old}`, 'test'), store);
    expect(await rotated.get(alice)).toEqual(a);
    expect(Keyring.inspect((await store.get(Vault.keyOf(alice)))!)?.keyId).toBe('k2');

    // Once every record is sealed again, the old key may go: what it alone sealed is gone.
    await new Vault(Keyring.parse(`k1 ${old}`, 'test'), store).put(bob, grantOf('bob-gh'));
    const retired = new Vault(Keyring.parse(`k2 ${next}`, 'test'), store);
    expect(await retired.get(alice)).toEqual(a);
    expect(await retired.get(bob)).toBeUndefined();
  });
});

describe('the key file', () => {
  it('is read with comments and blank lines, the first key sealing', () => {
    const ring = Keyring.fromFile(
      keyFile(['# rotated 2026-12', '', `k2 ${key()}`, `k1 ${key()}`]),
      'GATEHOUSE_VAULT_KEY_FILE',
    );
    expect(ring.current).toBe('k2');
  });

  it.each([
    [['k1 c2hvcnQ='], 'line 1: the key is not 32 bytes in base64'],
    [[`k1 ${key()}`, `k1 ${key()}`], 'line 2: its key id appears on an earlier line too'],
    [[`k1 ${key()} extra`], 'line 1: expected "<key id> <base64 key>"'],
    [[`bad/id ${key()}`], 'line 1: expected "<key id> <base64 key>"'],
    [['# nothing here'], 'holds no key'],
  ])('refuses %j, naming the file and the line and never the key', (lines, said) => {
    const path = keyFile(lines);
    let error: unknown;
    try {
      Keyring.fromFile(path, 'GATEHOUSE_VAULT_KEY_FILE');
    } catch (caught) {
      error = caught;
    }
    expect(error).toBeInstanceOf(ConfigError);
    const message = (error as ConfigError).message;
    expect(message).toContain(`GATEHOUSE_VAULT_KEY_FILE (${path})`);
    expect(message).toContain(said);
    for (const line of lines) {
      const material = line.split(' ')[1];
      if (material !== undefined && material.length > 20) expect(message).not.toContain(material);
    }
  });

  it('is refused when group or others can read it, and when it is missing', () => {
    const path = keyFile([`k1 ${key()}`]);
    chmodSync(path, 0o640);
    expect(() => Keyring.fromFile(path, 'GATEHOUSE_VAULT_KEY_FILE')).toThrow(
      /GATEHOUSE_VAULT_KEY_FILE: .* is readable by others \(mode 640\); chmod 600 it/,
    );
    expect(() => Keyring.fromFile(join(dir(), 'missing'), 'GATEHOUSE_VAULT_KEY_FILE')).toThrow(
      /GATEHOUSE_VAULT_KEY_FILE: cannot read .*missing \(ENOENT\)/,
    );
  });
});

describe('the grant file', () => {
  it('is written 0600, survives a restart, and is refused when others can read it', async () => {
    const path = join(dir(), 'grants.json');
    const ring = Keyring.parse(`k1 ${key()}`, 'test');
    const a = grantOf('alice-gh');
    const first = new Vault(ring, fileGrantStore(path, 'GATEHOUSE_VAULT_FILE'));
    await first.put(alice, a);
    await first.close();
    expect(statSync(path).mode & 0o777).toBe(0o600);
    const again = new Vault(ring, fileGrantStore(path, 'GATEHOUSE_VAULT_FILE'));
    expect(await again.get(alice)).toEqual(a);
    await again.close();
    chmodSync(path, 0o644);
    expect(() => fileGrantStore(path, 'GATEHOUSE_VAULT_FILE')).toThrow(
      /GATEHOUSE_VAULT_FILE: .* is readable by others \(mode 644\)/,
    );
    chmodSync(path, 0o600);
    writeFileSync(path, '[1, 2]');
    expect(() => fileGrantStore(path, 'GATEHOUSE_VAULT_FILE')).toThrow(/is not a grant file/);
  });

  it('serves one instance: a second opener is refused while the first holds it', async () => {
    const path = join(dir(), 'grants.json');
    const first = fileGrantStore(path, 'GATEHOUSE_VAULT_FILE');
    expect(() => fileGrantStore(path, 'GATEHOUSE_VAULT_FILE')).toThrow(
      /GATEHOUSE_VAULT_FILE: .*grants\.json is in use by this process .*replicas share grants through GATEHOUSE_REDIS_URL/,
    );
    await first.close();
    const second = fileGrantStore(path, 'GATEHOUSE_VAULT_FILE');
    await second.close();
  });
});
