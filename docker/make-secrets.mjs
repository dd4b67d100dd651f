#!/usr/bin/env node
// Creates the secrets docker/compose.yaml mounts, in docker/secrets/ (git-ignored): an API key
// (printed once; only its SHA-256 is stored), the state key, an Ed25519 audit signing key and its
// public key (audit_public_key.pem, for `gatehouse-audit verify --key`), the vault's keys for user
// mode (vault_keys), Redis's password with the
// configuration and URL made from it (redis.conf, redis_url), and
// each server's upstream credential as its declaration says (servers/<id>/package.json
// gatehouse.deploy): made by the server's own module when it has one (the postgres server's
// passwords and read-only URL), else a REPLACE-ME placeholder for you to fill in (the vendor
// tokens). Files that exist are kept (run it again safely).
// Usage: node docker/make-secrets.mjs [--rotate api_keys,state_key,redis_password,…] [--dir DIR]
// (--dir: another folder than docker/secrets/, e.g. to look before using them.)
import { createHash, createPublicKey, generateKeyPairSync, randomBytes } from 'node:crypto';
import { chmodSync, existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { declarations, identitySecretFile, redisConf, secretFile } from './render.mjs';

const dir = process.argv.includes('--dir')
  ? process.argv[process.argv.indexOf('--dir') + 1]
  : join(import.meta.dirname, 'secrets');
mkdirSync(dir, { recursive: true, mode: 0o700 });
const rotate = new Set(
  (process.argv[process.argv.indexOf('--rotate') + 1] ?? '').split(',').filter(Boolean),
);
if (!process.argv.includes('--rotate')) rotate.clear();
const random = (bytes = 32) => randomBytes(bytes).toString('base64url');
const said = [];

function secret(name, make) {
  const path = join(dir, name);
  if (existsSync(path) && !rotate.has(name.replace(/\.\w+$/, '')))
    return readFileSync(path, 'utf8');
  const value = make();
  // The directory is 0700 (no other user of this machine gets in); the files are 0644 because
  // Compose bind-mounts each file as it is, and the server in the container runs as uid 1000.
  writeFileSync(path, value, { mode: 0o644 });
  chmodSync(path, 0o644);
  said.push(name);
  return value;
}

secret('api_keys.json', () => {
  // A prefix of its own: nothing that looks like a vendor's token (GitHub's are gh*_…).
  const key = `gatehouse_${random()}`;
  process.stdout.write(
    `API key (shown once; clients send it as "Authorization: Bearer …"):\n  ${key}\n`,
  );
  const sha256 = createHash('sha256').update(key).digest('hex');
  return `${JSON.stringify([{ id: 'compose-1', sha256, principal: 'compose-operator', scopes: ['*'] }])}\n`;
});
secret('state_key', () => random(48));
const signing = secret('audit_signing_key.pem', () =>
  generateKeyPairSync('ed25519').privateKey.export({ type: 'pkcs8', format: 'pem' }).toString(),
);
/** A file made from a secret: written again whenever what it is made from changes. */
function derived(name, value) {
  const path = join(dir, name);
  if (existsSync(path) && readFileSync(path, 'utf8') === value) return;
  writeFileSync(path, value, { mode: 0o644 });
  chmodSync(path, 0o644);
  said.push(name);
}
// What a reviewer needs to check the trail's signatures: gatehouse-audit verify --key this file.
derived(
  'audit_public_key.pem',
  createPublicKey(signing).export({ type: 'spki', format: 'pem' }).toString(),
);
// The vault's keys for acting as each person (GATEHOUSE_VAULT_KEYS_FILE, ADR 0026): one line
// "<id> <32 bytes base64>". Rotating adds a new first key and keeps the old ones, which still
// open the grants they sealed (each is sealed again under the new key when next read).
{
  const path = join(dir, 'vault_keys');
  const line = () => `k${Date.now().toString(36)} ${randomBytes(32).toString('base64')}\n`;
  if (!existsSync(path)) {
    writeFileSync(path, line(), { mode: 0o644 });
    said.push('vault_keys');
  } else if (rotate.has('vault_keys')) {
    writeFileSync(path, line() + readFileSync(path, 'utf8'), { mode: 0o644 });
    said.push('vault_keys (a new first key; the old ones kept)');
  }
}
const redisPassword = secret('redis_password', () => random()).trim();
derived('redis.conf', redisConf(redisPassword));
derived('redis_url', `redis://:${redisPassword}@redis:6379\n`);
for (const server of declarations()) {
  const own = server.deploy.compose?.secrets;
  if (own !== undefined) {
    const { default: make } = await import(pathToFileURL(join(server.dir, own)).href);
    make(secret, random);
  }
  // A placeholder where the server made none, so the stack without this server still starts;
  // the server itself refuses to start until it is replaced (it names the variable).
  secret(secretFile(server), () => 'REPLACE-ME\n');
  // User mode's OAuth client secret (ADR 0026): a placeholder until the app is registered.
  if (server.deploy.identity !== undefined)
    secret(identitySecretFile(server), () => 'REPLACE-ME\n');
}
process.stdout.write(
  said.length === 0
    ? `make-secrets: all present in ${dir}\n`
    : `make-secrets: wrote ${said.join(', ')} in ${dir}\n`,
);
