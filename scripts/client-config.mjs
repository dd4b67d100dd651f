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
// Non-secret variables take their value from the environment when set (GITHUB_REPOS=acme/api …),
// otherwise the server's example value, to edit.
import {
  copyFileSync,
  existsSync,
  mkdirSync,
  readFileSync,
  readdirSync,
  renameSync,
  writeFileSync,
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
function shebangFlags(binPath) {
  const first = readFileSync(binPath, 'utf8').split('\n', 1)[0];
  const match = /^#!\S*env\s+(?:-S\s+)?node\s*(.*)$/.exec(first);
  return match ? match[1].split(/\s+/).filter(Boolean) : [];
}

/** What the client needs to start one server: command, args, env, and the secret files to make. */
export async function serverEntry(id, { secretsDir, env = process.env }) {
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
  let config = {};
  let backup;
  if (existsSync(path)) {
    const text = readFileSync(path, 'utf8');
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
    backup = `${path}.bak-${now.toISOString().replace(/[:.]/g, '-')}`;
    copyFileSync(path, backup);
  } else {
    mkdirSync(dirname(path), { recursive: true });
  }
  const replaced = entries
    .filter((e) => config.mcpServers?.[e.name] !== undefined)
    .map((e) => e.name);
  config.mcpServers = {
    ...config.mcpServers,
    ...Object.fromEntries(
      entries.map((e) => [e.name, { command: e.command, args: e.args, env: e.env }]),
    ),
  };
  const temporary = `${path}.tmp-${process.pid}`;
  writeFileSync(temporary, `${JSON.stringify(config, null, 2)}\n`, { mode: 0o600 });
  renameSync(temporary, path);
  return { backup, replaced };
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
  if (values.write && values.remote !== undefined) {
    throw new Error(
      'Claude Desktop adds remote servers under Settings → Connectors, not in its config file',
    );
  }
  const entries = [];
  for (const id of positionals)
    entries.push(await serverEntry(id, { secretsDir: values['secrets-dir'] }));
  if (values.write) {
    const path = values.config ?? claudeDesktopConfigPath();
    const { backup, replaced } = mergeInto(path, entries);
    process.stdout.write(
      `Updated ${path}${backup ? ` (the previous file is ${backup})` : ''}: ${entries.map((e) => e.name).join(', ')}${replaced.length ? ` (replaced ${replaced.join(', ')})` : ''}. Restart Claude Desktop.\n`,
    );
  } else {
    process.stdout.write(`${render(values.client, entries, values.remote)}\n`);
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
