// docker/make-secrets.mjs, run as a user runs it: what it writes, that it keeps what exists and
// rotates what it is told to, and that the Redis configuration it writes really makes a Redis
// that refuses clients without the password in the URL it writes beside it.
import { spawn, spawnSync } from 'node:child_process';
import { createPrivateKey, createPublicKey, sign, verify } from 'node:crypto';
import { mkdtempSync, readFileSync, readdirSync, statSync } from 'node:fs';
import { createConnection } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { eventually, freePort } from '@gatehouse/testkit';
import { describe, expect, it } from 'vitest';
import { ROOT } from './container.ts';

const run = (dir: string, ...args: string[]) => {
  const result = spawnSync(
    process.execPath,
    [join(ROOT, 'docker/make-secrets.mjs'), '--dir', dir, ...args],
    { encoding: 'utf8' },
  );
  expect(result.status, result.stderr).toBe(0);
  return result.stdout;
};
const read = (dir: string, name: string) => readFileSync(join(dir, name), 'utf8');

/** One RESP exchange with a Redis: the commands in order, the first line of each reply. */
async function ask(port: number, commands: string[][]): Promise<string[]> {
  const socket = createConnection({ host: '127.0.0.1', port });
  await new Promise((resolve, reject) => socket.once('connect', resolve).once('error', reject));
  const replies: string[] = [];
  let buffer = '';
  socket.on('data', (chunk) => {
    buffer += chunk.toString();
    const lines = buffer.split('\r\n');
    buffer = lines.pop()!;
    replies.push(...lines);
  });
  for (const [n, command] of commands.entries()) {
    socket.write(
      `*${command.length}\r\n${command.map((c) => `$${Buffer.byteLength(c)}\r\n${c}\r\n`).join('')}`,
    );
    await eventually(
      () => replies.length,
      (count) => count > n,
      5_000,
    );
  }
  socket.destroy();
  return replies;
}

describe('docker/make-secrets.mjs', () => {
  const dir = mkdtempSync(join(tmpdir(), 'secrets-'));
  let first = '';

  it('writes every secret Compose mounts, an API key of its own shape, and the audit public key', () => {
    first = run(dir);
    const key = /API key[^\n]*\n\s+(\S+)/.exec(first)?.[1] ?? '';
    // Not a vendor's token shape (GitHub's start gh…_); the secret scanner would take it for one.
    expect(key).toMatch(/^gatehouse_[A-Za-z0-9_-]{40,}$/);
    expect(readdirSync(dir).sort()).toEqual(
      expect.arrayContaining([
        'api_keys.json',
        'audit_public_key.pem',
        'audit_signing_key.pem',
        'redis.conf',
        'redis_password',
        'redis_url',
        'state_key',
        'vault_keys',
      ]),
    );
    expect(read(dir, 'api_keys.json')).not.toContain(key);
    // The public key verifies what the signing key signs.
    const data = Buffer.from('checkpoint');
    const signature = sign(null, data, createPrivateKey(read(dir, 'audit_signing_key.pem')));
    expect(verify(null, data, createPublicKey(read(dir, 'audit_public_key.pem')), signature)).toBe(
      true,
    );
    expect(statSync(dir).mode & 0o777).toBe(0o700);
  });

  it('keeps what exists, and a rotated Redis password changes its configuration and URL together', () => {
    const before = { conf: read(dir, 'redis.conf'), url: read(dir, 'redis_url') };
    expect(run(dir)).toMatch(/all present/);
    expect(read(dir, 'redis.conf')).toBe(before.conf);
    run(dir, '--rotate', 'redis_password');
    const password = new URL(read(dir, 'redis_url').trim()).password;
    expect(read(dir, 'redis_url')).not.toBe(before.url);
    expect(read(dir, 'redis.conf')).toContain(`requirepass ${password}\n`);
  });

  it("makes the vault's keys, and rotating them adds a first key while keeping the old", () => {
    const keyring = () =>
      read(dir, 'vault_keys')
        .trim()
        .split('\n')
        .map((l) => l.split(' '));
    const [only] = keyring();
    expect(keyring()).toHaveLength(1);
    expect(Buffer.from(only![1]!, 'base64')).toHaveLength(32);
    run(dir, '--rotate', 'vault_keys');
    const rotated = keyring();
    expect(rotated).toHaveLength(2);
    expect(rotated[1]).toEqual(only);
    expect(rotated[0]![0]).not.toBe(only![0]);
  });

  it('makes a Redis that refuses a client without the password and accepts the one in redis_url', async () => {
    const port = await freePort();
    const redis = spawn(
      'redis-server',
      [join(dir, 'redis.conf'), '--port', String(port), '--bind', '127.0.0.1'],
      { stdio: ['ignore', 'pipe', 'pipe'] },
    );
    try {
      let out = '';
      redis.stdout.on('data', (c: Buffer) => (out += c.toString()));
      await eventually(
        () => out,
        (o) => o.includes('Ready to accept connections'),
        10_000,
      );
      const password = decodeURIComponent(new URL(read(dir, 'redis_url').trim()).password);
      expect(await ask(port, [['PING']])).toEqual([expect.stringMatching(/^-NOAUTH/)]);
      expect(await ask(port, [['AUTH', 'wrong-password'], ['PING']])).toEqual([
        expect.stringMatching(/^-WRONGPASS/),
        expect.stringMatching(/^-NOAUTH/),
      ]);
      expect(await ask(port, [['AUTH', password], ['PING']])).toEqual(['+OK', '+PONG']);
      expect(await ask(port, [['CONFIG', 'GET', 'protected-mode']])).toEqual([
        expect.stringMatching(/^-NOAUTH/),
      ]);
    } finally {
      redis.kill();
    }
  });
});
