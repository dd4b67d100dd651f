/**
 * `@gatehouse/core/identity`: each person's own upstream identity (ADR 0026) — the vault of
 * delegated grants, sealed under the operator's keys and bound to their owner.
 */
export { Keyring } from './keyring.js';
export type { Sealed } from './keyring.js';
export { Vault } from './vault.js';
export type { Grant, GrantOwner } from './grant.js';
export { fileGrantStore, redisGrantStore } from './grant-store.js';
export type { GrantStore } from './grant-store.js';
export { AccountRefusedError, ConnectRequiredError, GrantRevokedError } from './grant.js';
export { grantOf, refreshGrant, upstreamOAuth } from './upstream-oauth.js';
export type { UpstreamOAuthOptions } from './upstream-oauth.js';
export { createConnect } from './connect.js';
export type { Connect, ConnectOptions, ConnectVendor } from './connect.js';
export { credentialFor, ownerOf } from './mode.js';
export type { UpstreamCredential, UpstreamIdentity } from './mode.js';
export { PersonToken, asPerson, disconnect, grantRefused, renewGrant } from './mode.js';
export { disconnectTool } from './disconnect-tool.js';
export { identityCheck, identityFromConfig, identityShape } from './settings.js';
export type { IdentityVendor } from './settings.js';
