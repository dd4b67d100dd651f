import { createPrivateKey, createPublicKey, sign, verify } from 'node:crypto';
import type { KeyObject } from 'node:crypto';
import { canonicalJson, sha256, sorted } from './canonical.js';
import { lineSafe } from './neutral.js';
import type { AuditRecord } from './record.js';

/** The record without `audit.hash`, every object in canonical key order (a fresh top level). */
function unsealed(record: AuditRecord): Record<string, unknown> {
  const { hash: _hash, ...integrity } = record.audit;
  return sorted({ ...record, audit: integrity }) as Record<string, unknown>;
}

const hashOf = (prevHash: string | null, canonical: string) =>
  sha256(`${prevHash ?? ''}\n${canonical}`);

/**
 * The hash of a record: SHA-256 over its `prev_hash` (empty for the first record of a chain), a
 * newline, and the canonical JSON of the record with `audit.hash` left out. Changing any field,
 * the order of records, or removing one breaks the chain at that point.
 */
export function recordHash(record: AuditRecord): string {
  return hashOf(record.audit.prev_hash, JSON.stringify(unsealed(record)));
}

/**
 * The record's hash and its JSON line from ONE serialisation: the record is put in canonical
 * order (records the core builds already are, so nothing nested is copied), V8's
 * `JSON.stringify` writes the hashed text, and the line is that text with `"hash":"…"` put where
 * canonical order puts it among the `audit` members — canonical JSON itself (with U+2028, U+2029
 * and U+0085 escaped: see `lineSafe`), so a verifier that parses and re-serialises it gets the
 * hashed bytes.
 */
export function sealRecord(record: AuditRecord): { hash: string; line: string } {
  const body = unsealed(record);
  const text = JSON.stringify(body);
  const hash = hashOf(record.audit.prev_hash, text);
  // Where the hash goes: after the members that sort before `audit` (`@timestamp`, `args`),
  // `"audit":{`, and the `checkpoint` member (the only integrity member sorting before `hash`).
  const before: Record<string, unknown> = {};
  for (const key of Object.keys(body)) if (key < 'audit') before[key] = body[key];
  const head = JSON.stringify(before);
  let at = (head.length === 2 ? 1 : head.length) + '"audit":{'.length;
  const { checkpoint } = body.audit as { checkpoint?: unknown };
  if (checkpoint !== undefined) at += `"checkpoint":${JSON.stringify(checkpoint)},`.length;
  // `prev_hash` (null or a hash) always follows, hence the comma.
  return { hash, line: lineSafe(`${text.slice(0, at)}"hash":"${hash}",${text.slice(at)}`) };
}

/** The bytes a checkpoint signature covers. */
export function checkpointPayload(stream: string, seq: number, hash: string, time: string): string {
  return canonicalJson({ stream, seq, hash, time });
}

/** A signing key for checkpoints, with the id verifiers use to pick the public key. */
export interface CheckpointSigner {
  keyId: string;
  privateKey: KeyObject;
}

/** The id of a public key: `ed25519:` + the first 16 hex digits of SHA-256 of its SPKI DER. */
export function keyIdOf(publicKey: KeyObject): string {
  const der = publicKey.export({ type: 'spki', format: 'der' });
  return `ed25519:${sha256(der.toString('base64')).slice(7, 23)}`;
}

/** Loads an Ed25519 private key (PKCS#8 PEM) as a checkpoint signer. */
export function loadSigner(pem: string, keyId?: string): CheckpointSigner {
  const privateKey = createPrivateKey(pem);
  if (privateKey.asymmetricKeyType !== 'ed25519') {
    throw new TypeError(`expected an Ed25519 private key, got ${privateKey.asymmetricKeyType}`);
  }
  return { privateKey, keyId: keyId ?? keyIdOf(createPublicKey(privateKey)) };
}

/** Signs a checkpoint payload (base64). */
export function signCheckpoint(signer: CheckpointSigner, payload: string): string {
  return sign(null, Buffer.from(payload), signer.privateKey).toString('base64');
}

/** Verifies a checkpoint signature. */
export function verifyCheckpoint(
  publicKey: KeyObject,
  payload: string,
  signature: string,
): boolean {
  try {
    return verify(null, Buffer.from(payload), publicKey, Buffer.from(signature, 'base64'));
  } catch {
    return false;
  }
}
