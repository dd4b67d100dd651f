/**
 * Rendered-Markdown exfiltration, closed for third-party text a client may render: an image
 * (or HTML that loads something) is fetched the moment it renders, and a link can hide under a
 * harmless label a URL that carries data out. `neutralizeMarkdown` keeps the text readable and
 * makes those constructs inert, outside code spans and fenced code blocks (where nothing renders):
 *
 * - every image (`![alt](url)`, `![alt][ref]`) becomes literal text;
 * - every raw HTML tag or comment (`<img …>`, `<a …>`, `<iframe>`, `<form>`, `<style>`, `<details>`,
 *   `<!-- … -->`, `<https://…>`) is escaped — except formatting tags without attributes
 *   (`<b>`, `</em>`, `<br/>`, `<table>`…: {@link FORMATTING}), which fetch nothing and hide
 *   nothing and stay byte for byte;
 * - a link or link reference definition whose destination is not http(s) or mailto, or is on a
 *   host outside `linkHosts`, becomes literal text: its URL is visible, not hidden by its label.
 *
 * What it changes is reported through `onChange` (for the audit record's sanitiser flags).
 */
export interface MarkdownOptions {
  /** Hosts links may point to and stay links (e.g. github.com); relative links always stay. */
  readonly linkHosts: readonly string[];
}

/**
 * Tags that only format what is visible: kept when written bare (`<b>`, `</b>`, `<br/>`), never
 * with attributes (an attribute is how a tag fetches, styles away or scripts). Not `details` or
 * `summary`: a collapsed block hides its content from the person reading.
 */
const FORMATTING = new Set([
  'b',
  'strong',
  'i',
  'em',
  'u',
  's',
  'strike',
  'del',
  'ins',
  'mark',
  'small',
  'sub',
  'sup',
  'code',
  'kbd',
  'samp',
  'var',
  'pre',
  'br',
  'hr',
  'p',
  'blockquote',
  'ul',
  'ol',
  'li',
  'dl',
  'dt',
  'dd',
  'table',
  'thead',
  'tbody',
  'tfoot',
  'tr',
  'th',
  'td',
  'h1',
  'h2',
  'h3',
  'h4',
  'h5',
  'h6',
]);

/** `<` that opens a formatting tag without attributes stays; any other markup's is escaped. */
function escapeMarkup(text: string): string {
  return text.replace(/<(?=[A-Za-z/!?])/g, (lt: string, at: number) => {
    const tag = /^<(\/?)([A-Za-z][A-Za-z0-9]*)\s*(\/?)>/.exec(text.slice(at));
    return tag !== null && FORMATTING.has(tag[2]!.toLowerCase()) && !(tag[1] && tag[3])
      ? lt
      : '&lt;';
  });
}

/** Splits text into code (left alone) and prose (neutralised), in order. */
function segments(text: string): Array<{ code: boolean; text: string }> {
  const out: Array<{ code: boolean; text: string }> = [];
  const lines = text.split(/(?<=\n)/);
  let prose = '';
  let fence: { char: string; length: number } | undefined;
  let block = '';
  for (const line of lines) {
    const marker = /^ {0,3}(`{3,}|~{3,})/.exec(line);
    if (fence === undefined) {
      if (
        marker !== null &&
        !(marker[1]![0] === '`' && line.slice(marker[0].length).includes('`'))
      ) {
        out.push({ code: false, text: prose });
        prose = '';
        fence = { char: marker[1]![0]!, length: marker[1]!.length };
        block = line;
      } else {
        prose += line;
      }
    } else {
      block += line;
      const closing = /^ {0,3}(`{3,}|~{3,})\s*$/.exec(line);
      if (closing !== null && closing[1]![0] === fence.char && closing[1]!.length >= fence.length) {
        out.push({ code: true, text: block });
        block = '';
        fence = undefined;
      }
    }
  }
  if (fence !== undefined) out.push({ code: true, text: block });
  out.push({ code: false, text: prose });
  // Inline code spans inside prose: a run of backticks up to the same run.
  return out.flatMap((s) => {
    if (s.code) return [s];
    const parts: Array<{ code: boolean; text: string }> = [];
    let last = 0;
    for (const m of s.text.matchAll(/(`+)(?:(?!\1)[\s\S])*?\1(?!`)/g)) {
      parts.push({ code: false, text: s.text.slice(last, m.index) });
      parts.push({ code: true, text: m[0] });
      last = m.index + m[0].length;
    }
    parts.push({ code: false, text: s.text.slice(last) });
    return parts;
  });
}

/** Whether a link destination may stay a link. */
function safeDestination(destination: string, hosts: readonly string[]): boolean {
  const url = destination.trim().replace(/^<|>$/g, '');
  if (url === '' || /^[#/?.]/.test(url)) return url !== '' && !url.startsWith('//');
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    return false;
  }
  if (parsed.protocol === 'mailto:') return true;
  if (parsed.protocol !== 'http:' && parsed.protocol !== 'https:') return false;
  const host = parsed.hostname.toLowerCase();
  return hosts.some((h) => host === h || host.endsWith(`.${h}`));
}

/** Neutralises images, raw HTML and links to other hosts in third-party Markdown. */
export function neutralizeMarkdown(
  text: string,
  options: MarkdownOptions,
  onChange?: () => void,
): string {
  if (!/[![<]/.test(text)) return text;
  const hosts = options.linkHosts.map((h) => h.toLowerCase());
  let changed = false;
  const result = segments(text)
    .map(({ code, text: part }) => {
      if (code) return part;
      const out = part
        // Images, inline or by reference: the opening bracket escaped, the rest plain text.
        .replace(/(?<!\\)!\[/g, '!\\[')
        // HTML tags (formatting ones bare excepted), comments, declarations and autolinks.
        .replace(/^[\s\S]*$/, escapeMarkup)
        // Link reference definitions to destinations that may not stay links.
        .replace(
          /^( {0,3})\[((?:[^\]\\\n]|\\.)+)\]:[ \t]*(\S+)/gm,
          (m: string, indent: string, label: string, destination: string) =>
            safeDestination(destination, hosts) ? m : `${indent}\\[${label}]: ${destination}`,
        )
        // Inline links: [label](destination "title").
        .replace(
          /(?<![\\!])\[((?:[^\]\\]|\\.)*)\]\(\s*(<[^>\n]*>|[^\s)]*)([^)]*)\)/g,
          (m: string, label: string, destination: string, rest: string) =>
            safeDestination(destination, hosts) && rest.trim() === ''
              ? m
              : `\\[${label}](${destination}${rest})`,
        );
      if (out !== part) changed = true;
      return out;
    })
    .join('');
  if (changed) onChange?.();
  return result;
}
