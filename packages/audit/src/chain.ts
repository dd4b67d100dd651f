import { createPrivateKey, createPublicKey, sign, verify } from 'node:crypto';
import type { KeyObject } from 'node:crypto';
import { canonicalJson, sha256 } from './canonical.js';
import type { AuditRecord } from './record.js';

/**
 * A record in canonical JSON, cut around its `audit` member: everything before it, everything
 * after it, and the integrity fields without `hash`. The hash covers the record with that audit
 * member; the line is the record with the hash added to it.
 */
function cut(record: AuditRecord) {
  const { hash: _hash, ...integrity } = record.audit;
  const members = record as unknown as Record<string, unknown>;
  let head = '{';
  let tail = '';
  let afterAudit = false;
  for (const key of Object.keys(members).sort()) {
    if (key === 'audit') {
      afterAudit = true;
      continue;
    }
    const value = members[key];
    if (value === undefined) continue;
    const member = `${JSON.stringify(key)}:${canonicalJson(value)}`;
    if (afterAudit) tail += `,${member}`;
    else head += head.length === 1 ? member : `,${member}`;
  }
  return { head: `${head}${head.length === 1 ? '' : ','}"audit":`, tail: `${tail}}`, integrity };
}

const hashOf = (record: AuditRecord, { head, tail, integrity }: ReturnType<typeof cut>) =>
  sha256(`${record.audit.prev_hash ?? ''}\n${head}${canonicalJson(integrity)}${tail}`);

/**
 * The hash of a record: SHA-256 over its `prev_hash` (empty for the first record of a chain), a
 * newline, and the canonical JSON of the record with `audit.hash` left out. Changing any field,
 * the order of records, or removing one breaks the chain at that point.
 */
export function recordHash(record: AuditRecord): string {
  return hashOf(record, cut(record));
}

/**
 * The record's hash and its JSON line from one serialisation of its members; the line is
 * canonical JSON itself, so a verifier that re-serialises gets the same bytes.
 */
export function sealRecord(record: AuditRecord): { hash: string; line: string } {
  const parts = cut(record);
  const hash = hashOf(record, parts);
  return { hash, line: `${parts.head}${canonicalJson({ ...parts.integrity, hash })}${parts.tail}` };
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
