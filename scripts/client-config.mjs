#!/usr/bin/env node
// The entry an MCP client needs to start Gatehouse servers over stdio, for chosen servers:
// the absolute path of this node, the flags each bin needs (from its shebang), and the
// variables each server requires — secrets as *_FILE paths, never inline values.
//
//   npm run client-config -- postgres github                 print the Claude Desktop entries
//   npm run client-config -- postgres --write                merge them into Claude Desktop's
//                                                            config (a backup is kept)
//   npm run client-config -- jira --client vscode            .vscode/mcp.json form (also: cursor,
//                                                            claude-code — a `claude mcp add` line)
//   npm run client-config -- github --remote https://github.mcp.example.com/mcp --client vscode
//
// Options: --secrets-dir DIR (where the secret files live; default ~/.config/gatehouse/secrets),
// --config FILE (the config file --write merges into; default: Claude Desktop's on this OS).
// Non-secret variables take their value from the environment when set (GITHUB_REPOS=acme/api …);
// printed, otherwise the server's example value, to edit; --write takes the value the config
// already has and refuses to write an example value into a real config.
// The entry names the node running this: run it with Node 22.19 or later (Node 24 LTS).
// `npm run client-config -- … > file` writes only the JSON (npm's banner is taken out of the file).
import {
  copyFileSync,
  existsSync,
  fstatSync,
  ftruncateSync,
  mkdirSync,
  readFileSync,
  readdirSync,
  renameSync,
  writeFileSync,
  writeSync,
} from 'node:fs';
import { homedir, platform } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const CLIENTS = ['claude-desktop', 'claude-code', 'vscode', 'cursor'];

/** Where Claude Desktop keeps its config on this operating system. */
export function claudeDesktopConfigPath(env = process.env, os = platform(), home = homedir()) {
  if (os === 'darwin')
    return join(home, 'Library/Application Support/Claude/claude_desktop_config.json');
  if (os === 'win32')
    return join(env.APPDATA ?? join(home, 'AppData/Roaming'), 'Claude/claude_desktop_config.json');
  return join(env.XDG_CONFIG_HOME ?? join(home, '.config'), 'Claude/claude_desktop_config.json');
}

/** The node flags a bin's shebang carries (`#!/usr/bin/env -S node --liftoff-only`). */
export function shebangFlags(binPath) {
  const first = readFileSync(binPath, 'utf8').split('\n', 1)[0];
  const match = /^#!\S*env\s+(?:-S\s+)?node\s*(.*)$/.exec(first);
  return match ? match[1].split(/\s+/).filter(Boolean) : [];
}

/** What the client needs to start one server: command, args, env, and the secret files to make. */
export async function serverEntry(id, { secretsDir, env = process.env, existing = {} }) {
  const dir = join(ROOT, 'servers', id);
  if (!existsSync(join(dir, 'package.json'))) {
    const known = readdirSync(join(ROOT, 'servers')).sort().join(', ');
    throw new Error(`unknown server "${id}" (servers: ${known})`);
  }
  const manifest = JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8'));
  const bin = join(dir, Object.values(manifest.bin)[0]);
  if (!existsSync(bin)) throw new Error(`${bin} is not built: run npm run build first`);
  const { docs } = await import(manifest.name);
  const { secretKeys } = await import('@gatehouse/core/runtime');
  const secrets = new Set(secretKeys(docs.schema));
  const entryEnv = {};
  const files = [];
  const edit = [];
  for (const [key, example] of Object.entries(docs.exampleEnv)) {
    if (secrets.has(key)) {
      const file = join(secretsDir, key.toLowerCase().replaceAll('_', '-'));
      entryEnv[`${key}_FILE`] = file;
      files.push({ variable: key, file });
    } else if (env[key] !== undefined) {
      entryEnv[key] = env[key];
    } else if (existing[key] !== undefined) {
      entryEnv[key] = existing[key];
    } else {
      entryEnv[key] = example;
      edit.push(key);
    }
  }
  return {
    name: manifest.name.replace('@gatehouse/server-', 'gatehouse-'),
    command: process.execPath,
    args: [...shebangFlags(bin), bin],
    env: entryEnv,
    files,
    edit,
  };
}

/**
 * The Claude Desktop entry of server `id` as the READMEs show it (scripts/gen-docs.mjs): what this
 * script writes, with the server's example values and this machine's paths made placeholders.
 */
export async function documentedEntry(id) {
  const manifest = JSON.parse(readFileSync(join(ROOT, 'servers', id, 'package.json'), 'utf8'));
  const { docs } = await import(manifest.name);
  const entry = await serverEntry(id, {
    secretsDir: '/home/you/.config/gatehouse/secrets',
    env: docs.exampleEnv,
  });
  const text = render('claude-desktop', [entry])
    .replaceAll(process.execPath, '/usr/local/bin/node')
    .replaceAll(ROOT, '/opt/gatehouse/');
  const files = entry.files.map((f) => `\`${f.file}\` (${f.variable})`).join(', ');
  return `\`npm run client-config -- ${id} --write\` puts this entry into Claude Desktop's config — with the path of your Node 24, of your checkout and your values (here the examples); each secret is a file it names, never a value in the config (${files}):\n\n\`\`\`json\n${text}\n\`\`\`\n`;
}

/** The client's configuration text for the entries (stdio) or the remote URL. */
export function render(client, entries, remote) {
  const stdio = (e) => ({ command: e.command, args: e.args, env: e.env });
  const http = () => ({
    type: 'http',
    url: remote,
    headers: { Authorization: 'Bearer ${input:gatehouse-api-key}' },
  });
  const pick = remote === undefined ? stdio : http;
  switch (client) {
    case 'claude-desktop':
    case 'cursor':
      return JSON.stringify(
        { mcpServers: Object.fromEntries(entries.map((e) => [e.name, pick(e)])) },
        null,
        2,
      );
    case 'vscode':
      return JSON.stringify(
        {
          ...(remote === undefined
            ? {}
            : {
                inputs: [
                  {
                    type: 'promptString',
                    id: 'gatehouse-api-key',
                    description: 'Gatehouse API key',
                    password: true,
                  },
                ],
              }),
          servers: Object.fromEntries(
            entries.map((e) => [
              e.name,
              remote === undefined ? { type: 'stdio', ...stdio(e) } : http(),
            ]),
          ),
        },
        null,
        2,
      );
    case 'claude-code':
      return entries
        .map((e) =>
          remote === undefined
            ? `claude mcp add ${e.name} ${Object.entries(e.env)
                .map(([k, v]) => `--env ${k}=${shellQuote(v)}`)
                .join(' ')} -- ${[e.command, ...e.args].map(shellQuote).join(' ')}`
            : `claude mcp add --transport http ${e.name} ${shellQuote(remote)} --header "Authorization: Bearer $GATEHOUSE_API_KEY"`,
        )
        .join('\n');
    default:
      throw new Error(`unknown client "${client}" (clients: ${CLIENTS.join(', ')})`);
  }
}

const shellQuote = (s) =>
  /^[\w@%+=:,./-]+$/.test(s) ? s : `'${String(s).replaceAll("'", "'\\''")}'`;

/**
 * Merges `entries` into the Claude Desktop config at `path`: other servers and settings are kept,
 * a backup of the old file is written beside it, and the new file replaces it in one rename.
 * A file that is not a JSON object is refused, and nothing is written.
 */
export function mergeInto(path, entries, now = new Date()) {
  const config = readConfig(path) ?? {};
  const text = `${JSON.stringify(merged(config, entries), null, 2)}\n`;
  if (existsSync(path) && readFileSync(path, 'utf8') === text)
    return { backup: undefined, replaced: [], unchanged: true };
  let backup;
  if (existsSync(path)) {
    backup = `${path}.bak-${now.toISOString().replace(/[:.]/g, '-')}`;
    copyFileSync(path, backup);
  } else {
    mkdirSync(dirname(path), { recursive: true });
  }
  const replaced = entries
    .filter((e) => config.mcpServers?.[e.name] !== undefined)
    .map((e) => e.name);
  const temporary = `${path}.tmp-${process.pid}`;
  writeFileSync(temporary, text, { mode: 0o600 });
  renameSync(temporary, path);
  return { backup, replaced, unchanged: false };
}

/** The config with the entries in it (other servers and settings kept, in their order). */
function merged(config, entries) {
  return {
    ...config,
    mcpServers: {
      ...config.mcpServers,
      ...Object.fromEntries(
        entries.map((e) => [e.name, { command: e.command, args: e.args, env: e.env }]),
      ),
    },
  };
}

/**
 * The Claude Desktop config at `path` (undefined when there is none). A file that is not a JSON
 * object, or whose mcpServers is not one, is refused — nothing is changed.
 */
export function readConfig(path) {
  if (!existsSync(path)) return undefined;
  const text = readFileSync(path, 'utf8');
  let config;
  try {
    config = text.trim() === '' ? {} : JSON.parse(text);
  } catch (error) {
    throw new Error(
      `${path} is not valid JSON (${error.message}); fix or move it, nothing was changed`,
      { cause: error },
    );
  }
  if (typeof config !== 'object' || config === null || Array.isArray(config)) {
    throw new Error(`${path} does not hold a JSON object; nothing was changed`);
  }
  if (
    config.mcpServers !== undefined &&
    (typeof config.mcpServers !== 'object' || Array.isArray(config.mcpServers))
  ) {
    throw new Error(`${path}: "mcpServers" is not an object; nothing was changed`);
  }
  return config;
}

/**
 * npm prints its banner (`> client-config …`) on stdout before the script runs, so
 * `npm run client-config -- … > file` would not be JSON. When stdout is a file that holds exactly
 * that banner (a shell's `>` truncated it; npm wrote it), the answer is written over it from the
 * start. Anything else — a terminal, a pipe, a file opened to append or with other content — is
 * written to as it is.
 */
export function writeOutput(text, fd = 1, env = process.env, argv = process.argv) {
  // npm's own words (@npmcli/run-script): the event, with name@version when the package has both.
  const event = env.npm_lifecycle_event;
  const command = `${env.npm_lifecycle_script}${argv.length > 2 ? ` ${argv.slice(2).join(' ')}` : ''}`;
  const banners =
    event === undefined || env.npm_config_loglevel === 'silent'
      ? []
      : [event, `${env.npm_package_name}@${env.npm_package_version} ${event}`].map((head) =>
          Buffer.byteLength(`\n> ${head}\n> ${command}\n\n`),
        );
  let stat;
  try {
    stat = fstatSync(fd);
  } catch {
    stat = undefined;
  }
  const bytes = Buffer.from(text);
  if (stat?.isFile() && stat.size > 0 && banners.includes(stat.size)) {
    writeSync(fd, bytes, 0, bytes.length, 0);
    // A file opened to append took the text at its end instead (size = banner + text): leave it.
    if (fstatSync(fd).size !== stat.size + bytes.length) ftruncateSync(fd, bytes.length);
    return;
  }
  if (banners.length > 0 && stat?.isFIFO())
    process.stderr.write(
      'client-config: npm printed its banner into this pipe first; `npm run -s client-config -- …` leaves it out\n',
    );
  writeSync(fd, bytes);
}

/** The Node.js the entry names must run the servers (they refuse an older one at start). */
export function checkNode(version = process.versions.node, path = process.execPath) {
  const [major = 0, minor = 0] = version.split('.').map(Number);
  if (major > 22 || (major === 22 && minor >= 19)) return;
  throw new Error(
    `this is Node.js ${version} (${path}); the entry would start the servers with it, and they need Node.js 22.19 or later. Install Node 24 LTS and run this with it (its path goes into the entry); nothing was written`,
  );
}

async function main() {
  const { values, positionals } = parseArgs({
    allowPositionals: true,
    options: {
      client: { type: 'string', default: 'claude-desktop' },
      write: { type: 'boolean', default: false },
      config: { type: 'string' },
      'secrets-dir': { type: 'string', default: join(homedir(), '.config/gatehouse/secrets') },
      remote: { type: 'string' },
      help: { type: 'boolean', short: 'h' },
    },
  });
  if (values.help || positionals.length === 0) {
    process.stdout.write(
      readFileSync(fileURLToPath(import.meta.url), 'utf8')
        .split('\nimport ')[0]
        .replace(/^#!.*\n/, '')
        .replace(/^\/\/ ?/gm, '') + '\n',
    );
    process.exitCode = positionals.length === 0 && !values.help ? 2 : 0;
    return;
  }
  if (!CLIENTS.includes(values.client))
    throw new Error(`unknown client "${values.client}" (clients: ${CLIENTS.join(', ')})`);
  if (values.write && values.client !== 'claude-desktop' && values.config === undefined) {
    throw new Error(
      '--write merges into Claude Desktop’s config; for another client pass --config FILE or paste the printed entry',
    );
  }
  if (values.remote !== undefined && values.client === 'claude-desktop') {
    // Claude Desktop's config file starts local servers only; a remote one is a connector.
    writeOutput(
      `Claude Desktop connects to a remote server as a connector, not through its config file:\n  Settings → Connectors → Add custom connector, URL ${values.remote}\n  (with GATEHOUSE_AUTH=oauth it signs you in; an API-key deployment needs a client that sends\n  headers: --client claude-code, vscode or cursor).\n`,
    );
    return;
  }
  if (values.remote === undefined) checkNode();
  const path = values.config ?? claudeDesktopConfigPath();
  const existing = values.write ? (readConfig(path)?.mcpServers ?? {}) : {};
  const entries = [];
  for (const id of positionals) {
    const name = `gatehouse-${id}`;
    entries.push(
      await serverEntry(id, {
        secretsDir: values['secrets-dir'],
        existing: existing[name]?.env ?? {},
      }),
    );
  }
  const examples = entries.flatMap((e) => e.edit.map((k) => `${k} (${e.name})`));
  if (values.write && examples.length > 0) {
    throw new Error(
      `no value for ${examples.join(', ')}: set it in the environment (e.g. ${entries.find((e) => e.edit.length)?.edit[0]}=… npm run client-config -- … --write) — an example value is never written into a real config; nothing was changed`,
    );
  }
  if (values.write) {
    const { backup, replaced, unchanged } = mergeInto(path, entries);
    process.stdout.write(
      unchanged
        ? `${path} already has these entries (${entries.map((e) => e.name).join(', ')}); nothing was changed.\n`
        : `Updated ${path}${backup ? ` (the previous file is ${backup})` : ''}: ${entries.map((e) => e.name).join(', ')}${replaced.length ? ` (replaced ${replaced.join(', ')})` : ''}. Restart Claude Desktop.\n`,
    );
  } else {
    writeOutput(`${render(values.client, entries, values.remote)}\n`);
  }
  if (values.remote === undefined) {
    const notes = [];
    for (const e of entries) {
      for (const f of e.files)
        notes.push(`  ${f.file}  ← the value of ${f.variable} (one line, chmod 600)`);
    }
    const edit = entries.flatMap((e) => e.edit.map((k) => `${k} (${e.name})`));
    process.stderr.write(
      `${notes.length ? `Put each secret in its file:\n  mkdir -p -m 700 ${values['secrets-dir']}\n${notes.join('\n')}\n` : ''}${edit.length ? `Edit the example values of: ${edit.join(', ')} (or set them in the environment and run this again).\n` : ''}`,
    );
  }
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  main().catch((error) => {
    process.stderr.write(`client-config: ${error.message}\n`);
    process.exitCode = 1;
  });
}
