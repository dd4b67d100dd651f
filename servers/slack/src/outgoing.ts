import { PolicyError } from '@gatehouse/core';
import type { SlackConfig } from './config.js';

/**
 * What a post may carry (wave2 §1.3): Slack decodes exactly `&`, `<` and `>`, and every control
 * sequence — `<!here>`, `<!channel>`, `<!everyone>`, `<@U…>`, `<!subteam^…>`, `<#C…>`, `<url|…>`
 * — is written between `<` and `>`. Escaping the three turns all of them into text; only the
 * mentions the operator configured survive. Links: a URL to a host outside SLACK_LINK_HOSTS is
 * refused or defanged, so no post can carry data out in a link (unfurls are off on top).
 */

const SCHEME_URL = /\b([a-z][a-z0-9+.-]*):\/\/([^\s<>|/?#"'`]+)[^\s<>|"'`]*/gi;
const WWW_HOST = /\b(www\.[a-z0-9-]+(?:\.[a-z0-9-]+)+)[^\s<>|"'`]*/gi;

function hostAllowed(host: string, hosts: readonly string[]): boolean {
  const h = host
    .toLowerCase()
    .replace(/:\d+$/, '')
    .replace(/^[^@]*@/, '');
  return hosts.some((allowed) => {
    const a = allowed.toLowerCase();
    return a.startsWith('.') ? h.endsWith(a) || h === a.slice(1) : h === a;
  });
}

/** `https://evil.example/x` → `hxxps://evil[.]example/x`: readable, not a link. */
function defang(url: string): string {
  const m = /^(?:([a-z][a-z0-9+.-]*):\/\/)?([^\s/?#]+)(.*)$/i.exec(url);
  if (m === null) return url;
  const [, scheme, host = '', rest = ''] = m;
  const s = scheme === undefined ? '' : `${scheme.replace(/t/gi, 'x')}://`;
  return `${s}${host.replace(/\./g, '[.]')}${rest}`;
}

/** The hosts of the links in a text, and the text with outside links defanged. */
export function checkLinks(
  text: string,
  config: Pick<SlackConfig, 'SLACK_LINK_HOSTS' | 'SLACK_LINK_POLICY'>,
): { text: string; outside: string[] } {
  const outside: string[] = [];
  const visit = (match: string, host: string): string => {
    if (hostAllowed(host, config.SLACK_LINK_HOSTS)) return match;
    outside.push(host.toLowerCase());
    return defang(match);
  };
  const out = text
    .replace(SCHEME_URL, (match: string, _scheme: string, host: string) => visit(match, host))
    .replace(WWW_HOST, (match: string, host: string) =>
      match.includes('[.]') ? match : visit(match, host),
    );
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
