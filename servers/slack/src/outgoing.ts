import { domainToASCII } from 'node:url';
import { PolicyError } from '@gatehouse/core';
import tlds from 'tlds' with { type: 'json' };
import type { SlackConfig } from './config.js';

/**
 * What a post may carry (Slack's "Formatting text for app surfaces"): Slack decodes exactly `&`, `<` and `>`, and every control
 * sequence — `<!here>`, `<!channel>`, `<!everyone>`, `<@U…>`, `<!subteam^…>`, `<#C…>`, `<url|…>`
 * — is written between `<` and `>`. Escaping the three turns all of them into text; only the
 * mentions the operator configured survive. Links: every host-shaped token (see `linkHost`) to a
 * host outside SLACK_LINK_HOSTS is refused or defanged, so no post can carry data out in a link
 * (unfurls are off on top).
 */

/** IANA's top-level domains (the `tlds` list), and the names reserved or used on intranets. */
const TLDS = new Set<string>([
  ...tlds,
  'example',
  'test',
  'invalid',
  'localhost',
  'local',
  'internal',
  'intranet',
  'lan',
  'corp',
  'home',
]);

/** The full stops browsers read as a dot in a host (ideographic, fullwidth, halfwidth). */
const DOTS = /[\u3002\uff0e\uff61]/g;
/** Invisible format characters (soft hyphen, zero-width space and joiners, bidi marks): IDNA drops them. */
const INVISIBLE = /\p{Cf}/gu;
/** A token: what lies between spaces and the characters Slack's markup uses around links. */
const TOKEN = /[^\s<>|"'`]+/g;
/** Wrapping punctuation around a token in prose: `(see evil.example/x).` */
const WRAP = /^[([{*_~]+|[)\]}.,;:!?*_~]+$/g;
/** A scheme-like prefix (`https:`, `mailto:`, `http:` with no slashes) and slashes after it. */
const PREFIX = /^(?:([a-z][a-z0-9+.-]*):)?(\/{1,3}|\\{2})?/i;
const WEB_SCHEMES = /^(?:https?|ftps?|wss?|file|mailto)$/i;
/** A run of dot-separated labels anywhere in a token (`x=evil.example`, `a,evil.example/y`). */
const LABELS =
  /[\p{L}\p{N}_](?:[\p{L}\p{M}\p{N}_-]*[\p{L}\p{M}\p{N}_])?(?:\.[\p{L}\p{N}_](?:[\p{L}\p{M}\p{N}_-]*[\p{L}\p{M}\p{N}_])?)+/gu;

/**
 * A token as a URL parser reads it: invisible characters gone, other full stops as dots, and
 * percent-escapes of host characters decoded (`evil%2eexample`, `%65vil.example`).
 */
function normalise(token: string): string {
  return token
    .replace(INVISIBLE, '')
    .replace(DOTS, '.')
    .replace(/%([0-9a-f]{2})/gi, (escape, hex: string) => {
      const c = String.fromCharCode(parseInt(hex, 16));
      return /[a-z0-9.-]/i.test(c) ? c : escape;
    });
}

/**
 * The host a token would link to in a Slack client, or undefined when it holds none. Decided on
 * the shape, in every spelling a client may read as a link (Slack does not document when it
 * auto-links, so every host-shaped token counts): with any scheme and any number of slashes, none
 * (`evil.example/x`, `http:evil.example`), `//host`, user information (`leak@host`), a port,
 * IDN and punycode labels, other full stops, an IP literal.
 */
export function linkHost(token: string): string | undefined {
  const bare = normalise(token).replace(WRAP, '');
  const [prefix = '', scheme, slashes] = PREFIX.exec(bare) ?? [];
  if (scheme !== undefined && slashes === undefined && !WEB_SCHEMES.test(scheme)) {
    // `evil.example:8080/x` (a host and a port, not a scheme), `note:`, `Re:subject` (a word and a
    // colon), `x:evil.example` (whatever follows the colon may itself be host-shaped).
    return hostOf(bare, false) ?? hostOf(bare.slice(prefix.length), false);
  }
  const explicit = slashes !== undefined || (scheme !== undefined && WEB_SCHEMES.test(scheme));
  return hostOf(bare.slice(prefix.length), explicit);
}

/**
 * Every host a token may link to. A token that opens with a link goes to that link's host (its
 * path may name files like `README.md`); any other token is searched for host-shaped runs
 * anywhere in it, since a client's link finder may start one after any punctuation
 * (`x=evil.example`, `a,evil.example/y`, `evil.example;z`).
 */
export function linkHosts(token: string): string[] {
  const leading = linkHost(token);
  if (leading !== undefined) return [leading];
  const hosts = new Set<string>();
  for (const [run] of normalise(token).matchAll(LABELS)) {
    const host = hostOf(run, false);
    if (host !== undefined) hosts.add(host);
  }
  return [...hosts];
}

/** The host of `rest` (an authority and whatever follows): host-shaped, or given a scheme. */
function hostOf(rest: string, explicit: boolean): string | undefined {
  const authority = rest.split(/[/?#\\]/, 1)[0] ?? '';
  const host = authority
    .slice(authority.lastIndexOf('@') + 1)
    .replace(/:\d*$/, '')
    .toLowerCase();
  if (host === '') return undefined;
  if (/^\[[0-9a-f:.]+\]$/.test(host) || /^\d{1,3}(?:\.\d{1,3}){3}$/.test(host)) return host;
  const labels = host.split('.');
  const shaped =
    labels.length >= 2 &&
    labels.every((l) => /^[\p{L}\p{N}_](?:[\p{L}\p{M}\p{N}_-]*[\p{L}\p{M}\p{N}_])?$/u.test(l));
  if (!shaped) return explicit && /^[\p{L}\p{N}.-]+$/u.test(host) ? ascii(host) : undefined;
  const last = labels.at(-1)!;
  const top = ascii(last);
  if (TLDS.has(last) || TLDS.has(top) || top.startsWith('xn--') || explicit) return ascii(host);
  return undefined;
}

/** A host in its ASCII (punycode) form, so a look-alike never matches an allowed host. */
function ascii(host: string): string {
  return domainToASCII(host) || host;
}

function hostAllowed(host: string, hosts: readonly string[]): boolean {
  return hosts.some((allowed) => {
    const a = ascii(allowed.toLowerCase().replace(/^\./, ''));
    return allowed.startsWith('.') ? host.endsWith(`.${a}`) || host === a : host === a;
  });
}

/**
 * A link made readable, not clickable: `hxxps://evil[.]example/x`, `leak@evil[.]example`,
 * `wss[:]//intranet`. The token is normalised first, so no escaped or invisible dot survives.
 */
function defang(token: string): string {
  const plain = normalise(token);
  const web = plain.replace(/^(\W*)(h)tt(ps?)(?=:)/i, '$1$2xx$3');
  const unlinked = web !== plain ? web : plain.replace(/^(\W*[a-z][a-z0-9+-]*):(?=\/)/i, '$1[:]');
  return unlinked.replace(/\./g, '[.]');
}

/** The hosts of the links in a text, and the text with outside links defanged. */
export function checkLinks(
  text: string,
  config: Pick<SlackConfig, 'SLACK_LINK_HOSTS' | 'SLACK_LINK_POLICY'>,
): { text: string; outside: string[] } {
  const outside: string[] = [];
  const out = text.replace(TOKEN, (token) => {
    const hosts = linkHosts(token).filter((host) => !hostAllowed(host, config.SLACK_LINK_HOSTS));
    if (hosts.length === 0) return token;
    outside.push(...hosts);
    return defang(token);
  });
  return { text: out, outside: [...new Set(outside)] };
}

/** Escapes Slack's three control characters, keeping only the configured mentions. */
export function escapeForSlack(text: string, allowedMentions: readonly string[]): string {
  const keep = new Set(allowedMentions.map((m) => `<${m}>`));
  return text
    .split(/(<[^<>]*>)/)
    .map((part) =>
      keep.has(part)
        ? part
        : part.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;'),
    )
    .join('');
}

/**
 * The text a post sends: links checked (refused, or defanged, per SLACK_LINK_POLICY), then
 * escaped. Throws a PolicyError naming the outside hosts when links are refused.
 */
export function outgoingText(text: string, config: SlackConfig): string {
  const links = checkLinks(text, config);
  if (links.outside.length > 0 && config.SLACK_LINK_POLICY === 'refuse') {
    throw new PolicyError(
      'slack_link_host',
      `The message links to ${links.outside.join(', ')}, outside the hosts posts may link to (${config.SLACK_LINK_HOSTS.join(', ') || 'none configured'}). Nothing was sent; remove the link or ask the operator (SLACK_LINK_HOSTS).`,
    );
  }
  return escapeForSlack(links.text, config.SLACK_ALLOWED_MENTIONS);
}
