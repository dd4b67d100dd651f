import { Writable } from 'node:stream';
import {
  ConfigError,
  UpstreamError,
  baseConfigSchema,
  MAX_LISTED_TEXT,
  READ_ONLY_ANNOTATIONS,
  defineConfig,
  defineServer,
  defineTool,
  loadConfig,
  namesInWords,
  sanitizeText,
  secret,
  neutralizeMarkdown,
  upstreamUrl,
} from '@gatehouse/core';
import {
  createLogger,
  isLoopbackHost,
  originAllowed,
  plainHttpUpstreams,
  redactConfig,
  secretKeys,
  memoryLimiter,
} from '@gatehouse/core/runtime';
import { seededRandom } from '@gatehouse/testkit';
import * as z from 'zod';
import { describe, expect, it, vi } from 'vitest';

function problemsOf(fn: () => unknown): readonly string[] {
  try {
    fn();
  } catch (error) {
    if (error instanceof ConfigError) return error.problems;
    throw error;
  }
  throw new Error('expected a ConfigError');
}

describe('loadConfig', () => {
  it('applies defaults: stdio, loopback, read-only tools', () => {
    const config = loadConfig(baseConfigSchema, {});
    expect(config).toMatchObject({
      GATEHOUSE_TRANSPORT: 'stdio',
      GATEHOUSE_HOST: '127.0.0.1',
      GATEHOUSE_HTTP_PATH: '/mcp',
      GATEHOUSE_ENABLE_WRITES: false,
      GATEHOUSE_READ_ONLY: false,
      GATEHOUSE_TOOLS_ENABLE: [],
      GATEHOUSE_DRAIN_MS: 10_000,
    });
  });

  it('parses lists, booleans and integers, treating empty values as unset', () => {
    const config = loadConfig(baseConfigSchema, {
      GATEHOUSE_TOOLS_ENABLE: ' a, b ,,c ',
      GATEHOUSE_READ_ONLY: 'YES',
      GATEHOUSE_PORT: ' 8080 ',
      GATEHOUSE_HOST: '',
    });
    expect(config.GATEHOUSE_TOOLS_ENABLE).toEqual(['a', 'b', 'c']);
    expect(config.GATEHOUSE_READ_ONLY).toBe(true);
    expect(config.GATEHOUSE_PORT).toBe(8080);
    expect(config.GATEHOUSE_HOST).toBe('127.0.0.1');
  });

  it('reports every problem at once, each under its variable name', () => {
    const problems = problemsOf(() =>
      loadConfig(baseConfigSchema, {
        GATEHOUSE_TRANSPORT: 'carrier-pigeon',
        GATEHOUSE_PORT: '70000',
        GATEHOUSE_DRAIN_MS: '1.5',
        GATEHOUSE_ENABLE_WRITES: 'sure',
      }),
    );
    expect(problems.map((p) => p.split(':')[0])).toEqual([
      'GATEHOUSE_TRANSPORT',
      'GATEHOUSE_PORT',
      'GATEHOUSE_DRAIN_MS',
      'GATEHOUSE_ENABLE_WRITES',
    ]);
  });

  it('lets servers extend the schema and never echoes a secret', () => {
    const schema = defineConfig({ API_TOKEN: secret(z.string().regex(/^tok_/)) });
    const problems = problemsOf(() => loadConfig(schema, { API_TOKEN: 'hunter2' }));
    expect(problems).toEqual(['API_TOKEN: invalid value (hidden: secret)']);
    const missing = problemsOf(() => loadConfig(schema, {}));
    expect(missing).toEqual(['API_TOKEN: required (set API_TOKEN or API_TOKEN_FILE)']);
    const config = loadConfig(schema, { API_TOKEN: 'tok_abc' });
    expect(redactConfig(schema, config).API_TOKEN).toBe('[secret]');
  });

  it('still knows a secret after .describe(), .optional() or .default() (zod clones it)', () => {
    const schema = defineConfig({
      A: secret(z.string()).describe('described after marking'),
      B: secret(z.string().min(1)).optional().describe('optional, then described'),
      C: secret(z.string()).default('x').describe('default, then described'),
      D: z.string().describe('not a secret'),
    });
    expect(secretKeys(schema).filter((k) => !k.startsWith('GATEHOUSE_'))).toEqual(['A', 'B', 'C']);
    const config = loadConfig(schema, { A: 'a-secret', B: 'b-secret', D: 'plain' });
    expect(redactConfig(schema, config)).toMatchObject({
      A: '[secret]',
      B: '[secret]',
      C: '[secret]',
      D: 'plain',
    });
  });

  it('reads NAME_FILE variants with the injected reader', () => {
    const schema = defineConfig({ API_TOKEN: secret(z.string()) });
    const config = loadConfig(
      schema,
      { API_TOKEN_FILE: '/run/secrets/token' },
      { readFile: (path) => (path === '/run/secrets/token' ? 'tok_from_file\n' : '') },
    );
    expect(config.API_TOKEN).toBe('tok_from_file');
  });

  it('requires authentication and an allowed-hosts list to bind beyond loopback', () => {
    const problems = problemsOf(() =>
      loadConfig(baseConfigSchema, { GATEHOUSE_TRANSPORT: 'http', GATEHOUSE_HOST: '10.1.2.3' }),
    );
    expect(problems.map((p) => p.split(':')[0])).toEqual([
      'GATEHOUSE_HOST',
      'GATEHOUSE_ALLOWED_HOSTS',
    ]);
    const origins = problemsOf(() =>
      loadConfig(baseConfigSchema, {
        GATEHOUSE_TRANSPORT: 'http',
        GATEHOUSE_ALLOWED_ORIGINS: 'https://ok.example,https://bad.example/path',
      }),
    );
    expect(origins).toEqual([
      'GATEHOUSE_ALLOWED_ORIGINS: "https://bad.example/path" is not an origin (expected scheme://host[:port], no path)',
    ]);
  });

  it('says every problem at once: a variable that fails does not hide the checks of the others', () => {
    const schema = defineConfig({ ACME_URL: z.url() });
    const problems = problemsOf(() =>
      loadConfig(schema, {
        ACME_URI: 'https://acme.example',
        GATEHOUSE_TRANSPORT: 'http',
        GATEHOUSE_HOST: '0.0.0.0',
        GATEHOUSE_AUTH: 'api_key',
        GATEHOUSE_PORT: 'eighty',
      }),
    );
    expect(problems).toEqual([
      'GATEHOUSE_PORT: expected an integer',
      'ACME_URL: required (set ACME_URL or ACME_URL_FILE); ACME_URI is set: did you mean ACME_URL?',
      'GATEHOUSE_ALLOWED_HOSTS: required when GATEHOUSE_HOST (0.0.0.0) is not a loopback address (DNS-rebinding protection)',
      'GATEHOUSE_API_KEYS: required when GATEHOUSE_AUTH includes api_key',
    ]);
    // A check that reads a variable which failed says nothing more (no guess from a default).
    expect(
      problemsOf(() =>
        loadConfig(baseConfigSchema, {
          GATEHOUSE_TRANSPORT: 'htp',
          GATEHOUSE_AUDIT_SINKS: 'stdout',
        }),
      ),
    ).toEqual([expect.stringMatching(/^GATEHOUSE_TRANSPORT: /)]);
  });

  it('names the variable meant by an alias a server declares, for a required one', () => {
    const schema = defineConfig(
      { ACME_TOKEN: secret(z.string()) },
      { aliases: { ACME_TOKEN: ['ACME_KEY', 'OTHER_TOOL_TOKEN'] } },
    );
    const problems = problemsOf(() => loadConfig(schema, { OTHER_TOOL_TOKEN_FILE: '/run/x' }));
    expect(problems).toEqual([
      'ACME_TOKEN: required (set ACME_TOKEN or ACME_TOKEN_FILE); OTHER_TOOL_TOKEN_FILE is set: did you mean ACME_TOKEN?',
    ]);
  });

  it('refuses placeholders and pasted wrappings of any secret, never repeating the value', () => {
    const schema = defineConfig({ ACME_TOKEN: secret(z.string()) });
    const said = (value: string) => problemsOf(() => loadConfig(schema, { ACME_TOKEN: value }));
    expect(said('REPLACE-ME-with-the-acme-token')).toEqual([
      'ACME_TOKEN: still a placeholder from an example (REPLACE-ME or similar): set the real value',
    ]);
    expect(said('<your token here>')[0]).toMatch(/placeholder/);
    expect(said('changeme')[0]).toMatch(/placeholder/);
    expect(said("'tok_12345678'")[0]).toMatch(/wrapped in quotes/);
    expect(said('Bearer tok_12345678')[0]).toMatch(/authorization scheme/);
    expect(said('Bearer tok_12345678').join()).not.toContain('tok_12345678');
    expect(
      problemsOf(() =>
        loadConfig(baseConfigSchema, {
          GATEHOUSE_STATE_KEY: 'REPLACE-ME-with-32-or-more-random-characters',
        }),
      ),
    ).toEqual([
      'GATEHOUSE_STATE_KEY: still a placeholder from an example (REPLACE-ME or similar): set the real value',
    ]);
  });

  it('refuses plain http:// to an upstream beyond loopback unless explicitly allowed', () => {
    const schema = defineConfig({ ACME_URL: upstreamUrl() });
    expect(
      problemsOf(() => loadConfig(schema, { ACME_URL: 'http://acme.internal:8080/api' })),
    ).toEqual([
      'ACME_URL: plain http:// to acme.internal would carry the credentials unencrypted; use https:// (or set GATEHOUSE_ALLOW_PLAIN_HTTP_UPSTREAM=true on a network you trust; loopback is always allowed)',
    ]);
    for (const url of [
      'http://127.0.0.1:9/api',
      'http://localhost/api',
      'http://[::1]:8/',
      'https://acme.internal',
    ])
      expect(loadConfig(schema, { ACME_URL: url }).ACME_URL).toBe(url);
    const allowed = loadConfig(schema, {
      ACME_URL: 'http://acme.internal/api',
      GATEHOUSE_ALLOW_PLAIN_HTTP_UPSTREAM: 'true',
    });
    expect(plainHttpUpstreams(schema, allowed)).toEqual([
      { variable: 'ACME_URL', host: 'acme.internal' },
    ]);
    // The core's own upstream: the issuer's key set.
    expect(
      problemsOf(() =>
        loadConfig(baseConfigSchema, { GATEHOUSE_OAUTH_JWKS_URL: 'http://idp.acme.example/jwks' }),
      )[0],
    ).toMatch(/^GATEHOUSE_OAUTH_JWKS_URL: plain http:\/\/ to idp\.acme\.example/);
  });

  it('checks the audit settings together', () => {
    expect(
      problemsOf(() => loadConfig(baseConfigSchema, { GATEHOUSE_AUDIT_SINKS: 'file' })),
    ).toEqual(['GATEHOUSE_AUDIT_FILE: required when GATEHOUSE_AUDIT_SINKS includes file']);
    expect(
      problemsOf(() => loadConfig(baseConfigSchema, { GATEHOUSE_AUDIT_SINKS: 'stdout' })),
    ).toEqual([
      'GATEHOUSE_AUDIT_SINKS: stdout carries the protocol on the stdio transport; use stderr or file',
    ]);
    expect(
      problemsOf(() => loadConfig(baseConfigSchema, { GATEHOUSE_AUDIT_FILE: '/tmp/a.jsonl' }))[0],
    ).toMatch(/^GATEHOUSE_AUDIT_SINKS: add file/);
    expect(
      problemsOf(() => loadConfig(baseConfigSchema, { GATEHOUSE_AUDIT_SINKS: 'stderr,syslog' }))[0],
    ).toMatch(/^GATEHOUSE_AUDIT_SINKS: /);
    const badKey = problemsOf(() =>
      loadConfig(baseConfigSchema, {
        GATEHOUSE_AUDIT_SIGNING_KEY: '-----BEGIN PRIVATE KEY-----\nnope\n-----END PRIVATE KEY-----',
      }),
    );
    expect(badKey).toEqual([
      'GATEHOUSE_AUDIT_SIGNING_KEY: not an Ed25519 private key in PKCS#8 PEM form (hidden: secret)',
    ]);
    const http = loadConfig(baseConfigSchema, {
      GATEHOUSE_TRANSPORT: 'http',
      GATEHOUSE_AUDIT_SINKS: 'stdout,stderr',
    });
    expect(http.GATEHOUSE_AUDIT_SINKS).toEqual(['stdout', 'stderr']);
  });

  it('knows which hosts are loopback', () => {
    expect(['127.0.0.1', '127.9.9.9', '::1', '[::1]', 'localhost'].every(isLoopbackHost)).toBe(
      true,
    );
    expect(['0.0.0.0', '::', '10.0.0.1', 'example.com'].some(isLoopbackHost)).toBe(false);
  });
});

describe('originAllowed', () => {
  it('passes requests without an Origin (non-browser clients)', () => {
    expect(originAllowed(undefined, [], true)).toBe(true);
  });
  it('matches configured origins exactly (scheme, host and port)', () => {
    const allowed = ['https://app.example.com'];
    expect(originAllowed('https://app.example.com', allowed, false)).toBe(true);
    expect(originAllowed('http://app.example.com', allowed, false)).toBe(false);
    expect(originAllowed('https://app.example.com:444', allowed, false)).toBe(false);
    expect(originAllowed('https://app.example.com.evil.io', allowed, false)).toBe(false);
  });
  it('allows localhost origins only on a loopback bind', () => {
    expect(originAllowed('http://localhost:3000', [], true)).toBe(true);
    expect(originAllowed('http://localhost:3000', [], false)).toBe(false);
    expect(originAllowed('null', [], true)).toBe(false);
    expect(originAllowed('file://', [], true)).toBe(false);
  });
});

describe('sanitizeText', () => {
  it('leaves plain text alone and reports nothing', () => {
    const { text, flags } = sanitizeText('plain ASCII\twith\nlines');
    expect(text).toBe('plain ASCII\twith\nlines');
    expect(flags.size).toBe(0);
  });
  it('removes hidden instructions in Unicode tags but keeps emoji tag sequences', () => {
    const hidden = [...'ignore previous']
      .map((c) => String.fromCodePoint(0xe0000 + c.charCodeAt(0)))
      .join('');
    expect(sanitizeText(`hello${hidden}`).text).toBe('hello');
    expect(sanitizeText('🏴󠁧󠁢󠁷󠁬󠁳󠁿').text).toBe('🏴󠁧󠁢󠁷󠁬󠁳󠁿');
  });
  it('removes C1 controls and OSC sequences (terminal hyperlinks)', () => {
    expect(sanitizeText('a\u0085b\u0086c').text).toBe('abc');
    // An 8-bit C1 CSI is removed; what followed it is inert text.
    expect(sanitizeText('a\u009b31mb').text).toBe('a31mb');
    expect(sanitizeText('\u001b]8;;https://evil.example\u0007click\u001b]8;;\u0007').text).toBe(
      'click',
    );
  });
  it('keeps right-to-left scripts and joiners', () => {
    const arabic = 'مرحبا بالعالم';
    const family = '👨‍👩‍👧';
    expect(sanitizeText(`${arabic} ${family}`).text).toBe(`${arabic} ${family}`);
  });
});

describe('createLogger', () => {
  it('redacts credential fields wherever they sit', () => {
    let out = '';
    const destination = new Writable({
      write(chunk: Buffer, _e, done) {
        out += chunk.toString();
        done();
      },
    });
    const logger = createLogger({ destination, redact: ['config.DB_URL'] });
    logger.info(
      {
        password: 'p1',
        headers: { authorization: 'Bearer abc' },
        upstream: { request: { token: 'ghp_x' } },
        config: { DB_URL: 'postgres://u:pw@h/db', PORT: 1 },
      },
      'hello',
    );
    const line = JSON.parse(out) as Record<string, any>;
    expect(line.password).toBe('[secret]');
    expect(line.headers.authorization).toBe('[secret]');
    expect(line.upstream.request.token).toBe('[secret]');
    expect(line.config).toEqual({ DB_URL: '[secret]', PORT: 1 });
    expect(out).not.toMatch(/p1|abc|ghp_x|pw@/);
  });
});

describe('UpstreamError.toolMessage', () => {
  it.each([
    [401, 'the server credentials were rejected'],
    [403, 'access denied'],
    [404, 'not found'],
    [409, 'conflict'],
    [422, 'the request was invalid'],
  ])('keeps the meaning of %i', (status, meaning) => {
    const message = new UpstreamError({ service: 'X', status, message: 'detail' }).toolMessage();
    expect(message).toBe(`X answered ${status} (${meaning}): detail`);
  });
  it('never shows the detail of a 5xx', () => {
    const message = new UpstreamError({
      service: 'X',
      status: 502,
      message: 'secret internals',
    }).toolMessage();
    expect(message).not.toContain('secret internals');
  });
});

describe('defineTool', () => {
  const base = {
    name: 'x_tool',
    title: 'X',
    description: 'x',
    annotations: {
      readOnlyHint: true,
      destructiveHint: false,
      idempotentHint: true,
      openWorldHint: false,
    },
    handler: async () => 'x',
  };
  it('refuses a non-strict input schema', () => {
    expect(() => defineTool({ ...base, access: 'read', input: z.object({}) })).toThrow(/strict/);
  });
  it('refuses annotations that contradict the access class', () => {
    expect(() => defineTool({ ...base, access: 'write', input: z.strictObject({}) })).toThrow(
      /readOnlyHint/,
    );
  });
  it('refuses names outside the spec pattern', () => {
    expect(() =>
      defineTool({ ...base, name: 'bad name', access: 'read', input: z.strictObject({}) }),
    ).toThrow(/must match/);
  });
  it('refuses an argument the model would get without a description, naming it', () => {
    const input = z.strictObject({
      repo: z.string().describe('owner/repo'),
      state: z.enum(['open', 'closed']).optional(),
      count: z.number().describe('   '),
    });
    expect(() => defineTool({ ...base, access: 'read', input })).toThrow(
      /every argument needs a description .* missing on state, count$/,
    );
    // Described inside a wrapper counts: the model reads it in the input JSON schema.
    const wrapped = z.strictObject({ repo: z.string().describe('owner/repo').optional() });
    expect(defineTool({ ...base, access: 'read', input: wrapped }).name).toBe('x_tool');
  });
});

describe('namesInWords', () => {
  it('lists every name while they fit, else as many as fit and how many more', () => {
    expect(namesInWords(['a/b', 'c/d'])).toBe('a/b, c/d');
    const names = Array.from({ length: 500 }, (_, i) => `owner/repository-${i}`);
    const words = namesInWords(names, 120);
    expect(words.length).toBeLessThanOrEqual(120);
    const shown = words.replace(/ and \d+ more$/, '').split(', ');
    expect(shown).toEqual(names.slice(0, shown.length));
    expect(words).toMatch(new RegExp(` and ${500 - shown.length} more$`));
    // One more name would not have fitted.
    expect(
      `${names.slice(0, shown.length + 1).join(', ')} and ${498 - shown.length} more`.length,
    ).toBeGreaterThan(120);
    // A single name longer than the room is still named: never an empty list.
    expect(namesInWords(['x'.repeat(50), 'y'], 10)).toBe(`${'x'.repeat(50)} and 1 more`);
  });

  it('is what keeps instructions within what clients show: defineServer refuses longer ones, and longer descriptions', () => {
    const server = (instructions: string) => () =>
      defineServer({ name: 'long', version: '1.0.0', instructions, tools: [] });
    expect(server('x'.repeat(MAX_LISTED_TEXT))).not.toThrow();
    expect(server('x'.repeat(MAX_LISTED_TEXT + 1))).toThrow(/2049 characters, over 2048/);
    const tool = (description: string) => () =>
      defineServer({
        name: 'long',
        version: '1.0.0',
        tools: [
          defineTool({
            name: 'long_tool',
            title: 'Long',
            description,
            access: 'read',
            annotations: READ_ONLY_ANNOTATIONS,
            input: z.strictObject({}),
            handler: async () => 'ok',
          }),
        ],
      });
    expect(tool('x'.repeat(MAX_LISTED_TEXT))).not.toThrow();
    expect(tool('x'.repeat(MAX_LISTED_TEXT + 1))).toThrow(
      /description of tool "long_tool" is 2049 characters, over 2048/,
    );
  });
});

describe('neutralizeMarkdown', () => {
  const hosts = { linkHosts: ['github.com'] };
  it.each([
    ['an image', '![a](https://x.example/p.png?d=1)', '!\\[a](https://x.example/p.png?d=1)'],
    ['a reference image', '![a][r]', '!\\[a][r]'],
    ['an HTML image', '<img src=https://x.example/p>', '&lt;img src=https://x.example/p>'],
    ['a hidden comment', 'a <!-- b --> c', 'a &lt;!-- b --> c'],
    ['an autolink', '<https://x.example/q>', '&lt;https://x.example/q>'],
    [
      'a link to another host',
      '[docs](https://x.example/?q=1)',
      '\\[docs](https://x.example/?q=1)',
    ],
    ['a protocol-relative link', '[a](//x.example/p)', '\\[a](//x.example/p)'],
    ['a javascript: link', '[a](javascript:alert(1))', '\\[a](javascript:alert(1))'],
    ['a link with a title', '[a](https://github.com/x "t")', '\\[a](https://github.com/x "t")'],
    ['a reference to another host', '[r]: https://x.example/s', '\\[r]: https://x.example/s'],
    [
      'a formatting tag with a style',
      '<b style="display:none">x</b>',
      '&lt;b style="display:none">x</b>',
    ],
    ['a formatting tag with a handler', '<i onmouseover=x>y</i>', '&lt;i onmouseover=x>y</i>'],
    [
      'an iframe',
      '<iframe src=https://x.example></iframe>',
      '&lt;iframe src=https://x.example>&lt;/iframe>',
    ],
    ['an object', '<object data=x></object>', '&lt;object data=x>&lt;/object>'],
    [
      'a form',
      '<form action=https://x.example><input></form>',
      '&lt;form action=https://x.example>&lt;input>&lt;/form>',
    ],
    ['a style block', '<style>p{display:none}</style>', '&lt;style>p{display:none}&lt;/style>'],
    [
      'a collapsed block',
      '<details><summary>ok</summary>hidden</details>',
      '&lt;details>&lt;summary>ok&lt;/summary>hidden&lt;/details>',
    ],
    [
      'a link tag',
      '<a href=https://x.example>here</a>',
      '&lt;a href=https://x.example>here&lt;/a>',
    ],
    ['a script', '<script>fetch(1)</script>', '&lt;script>fetch(1)&lt;/script>'],
  ])('makes %s inert', (_n, input, expected) => {
    expect(neutralizeMarkdown(input, hosts)).toBe(expected);
  });

  it.each([
    '[docs](https://github.com/acme/api/wiki)',
    '[sub](https://docs.github.com/x)',
    '[rel](/acme/api/issues/1) [anchor](#top) [mail](mailto:a@b.c)',
    '`![inline code](https://x.example/p)`',
    '```\n![fenced](https://x.example/p)\n<img src=x>\n```',
    'plain text, a < b and [brackets] alone',
    // Formatting tags without attributes fetch and hide nothing: byte for byte.
    '<b>bold</b> <strong>s</strong> <em>e</em> <i>i</i> <del>d</del> <sub>2</sub><sup>3</sup>',
    'line<br>break<br/>and<br />more <kbd>Ctrl</kbd>+<kbd>C</kbd> <B>UPPER</B>',
    '<table><thead><tr><th>a</th></tr></thead><tbody><tr><td>1</td></tr></tbody></table>',
    '<p>para</p><ul><li>one</li></ul><blockquote>q</blockquote><h3>h</h3><hr>',
  ])('leaves %s as it is', (input) => {
    expect(neutralizeMarkdown(input, hosts)).toBe(input);
  });
});

describe('the in-process rate limiter', () => {
  const at = Date.UTC(2026, 11, 1, 12, 0, 0);
  it('passes N in a minute, then says how long until the oldest leaves it', async () => {
    vi.useFakeTimers({ now: at });
    try {
      const limiter = memoryLimiter(6, 'read');
      const first = [];
      for (let i = 0; i < 8; i++) first.push(await limiter.take('p\u0000tool'));
      expect(first).toEqual([0, 0, 0, 0, 0, 0, 60_000, 60_000]);
      vi.advanceTimersByTime(59_999);
      expect(await limiter.take('p\u0000tool')).toBe(1);
      vi.advanceTimersByTime(1);
      // The six calls have left the minute together: six more (refusals were not counted).
      const again = [];
      for (let i = 0; i < 7; i++) again.push(await limiter.take('p\u0000tool'));
      expect(again).toEqual([0, 0, 0, 0, 0, 0, 60_000]);
      // Another key has its own log.
      expect(await limiter.take('q\u0000tool')).toBe(0);
    } finally {
      vi.useRealTimers();
    }
  });

  it.each([
    ['paced, one a second', () => 1_000],
    ['paced, four a second', () => 250],
    ['in bursts at the minute boundary', (i: number) => (i % 30 === 29 ? 58_000 : 10)],
    [
      'at random',
      (
        (r) => () =>
          Math.floor(r() * 5_000)
      )(seededRandom(7)),
    ],
  ])('never lets more than N through in any 60 seconds: %s', async (_, gap) => {
    vi.useFakeTimers({ now: at });
    try {
      const perMinute = 30;
      const limiter = memoryLimiter(perMinute, 'read');
      const passed: number[] = [];
      for (let i = 0; i < 600; i++) {
        if ((await limiter.take('k')) === 0) passed.push(Date.now());
        vi.advanceTimersByTime(gap(i));
      }
      // The invariant over every window that starts at an accepted call.
      for (let i = 0; i + perMinute < passed.length; i++) {
        expect(passed[i + perMinute]! - passed[i]!).toBeGreaterThanOrEqual(60_000);
      }
      // …and the rate is used, not only respected: a caller who waits is served.
      expect(passed.length).toBeGreaterThan(perMinute);
    } finally {
      vi.useRealTimers();
    }
  });
});
