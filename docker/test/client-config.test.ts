// The client config generator (scripts/client-config.mjs) on a real Claude Desktop config file:
// merged with a backup, secrets as files, and the written entry actually starts the server.
import { mkdirSync, mkdtempSync, readFileSync, readdirSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { connectStdio } from '@gatehouse/testkit';
import { githubSeed, startGitHubFake } from '@gatehouse/testkit/github';
import { describe, expect, it } from 'vitest';
import { ROOT, serverNames, sh } from './container.ts';

/** The machine's own Node (20, too old for the servers), as on a fresh Debian. */
const MACHINE_NODE = '/usr/bin/node';

const SCRIPT = join(ROOT, 'scripts/client-config.mjs');
const TOKEN =
  'github_pat_11CLIENTCONFIG00000000000000000000000000000000000000000000000000000000000000000';

/** Runs the generator with HOME and XDG_CONFIG_HOME in `home` (where Claude Desktop's file is). */
async function generate(home: string, args: string[], env: Record<string, string> = {}) {
  const vars = {
    HOME: home,
    XDG_CONFIG_HOME: join(home, '.config'),
    PATH: process.env.PATH ?? '',
    ...env,
  };
  return sh('env', [
    '-i',
    ...Object.entries(vars).map(([k, v]) => `${k}=${v}`),
    process.execPath,
    SCRIPT,
    ...args,
  ]);
}

describe('client-config', () => {
  it('merges into an existing Claude Desktop config, keeps a backup, and the entry starts the server', async () => {
    const home = mkdtempSync(join(tmpdir(), 'claude-home-'));
    const configFile = join(home, '.config/Claude/claude_desktop_config.json');
    mkdirSync(join(home, '.config/Claude'), { recursive: true });
    const original = `${JSON.stringify(
      {
        globalShortcut: 'Ctrl+Space',
        mcpServers: {
          filesystem: {
            command: 'npx',
            args: ['-y', '@modelcontextprotocol/server-filesystem', '/tmp'],
          },
        },
      },
      null,
      2,
    )}\n`;
    writeFileSync(configFile, original);
    const secrets = join(home, 'secrets');

    const run = await generate(home, ['github', 'postgres', '--write', '--secrets-dir', secrets], {
      GITHUB_REPOS: 'acme/api',
    });
    expect(run.code, run.stderr).toBe(0);
    expect(run.stdout).toMatch(
      /^Updated .*claude_desktop_config\.json \(the previous file is .*\.bak-.*\): gatehouse-github, gatehouse-postgres\. Restart Claude Desktop\.\n$/,
    );
    // The instructions name each secret file, never a value.
    expect(run.stderr).toContain(`${secrets}/github-token  ← the value of GITHUB_TOKEN`);
    expect(run.stderr).toContain(`${secrets}/postgres-url  ← the value of POSTGRES_URL`);

    const backups = readdirSync(join(home, '.config/Claude')).filter((f) => f.includes('.bak-'));
    expect(backups).toHaveLength(1);
    expect(readFileSync(join(home, '.config/Claude', backups[0]!), 'utf8')).toBe(original);

    const config = JSON.parse(readFileSync(configFile, 'utf8')) as {
      globalShortcut: string;
      mcpServers: Record<string, { command: string; args: string[]; env?: Record<string, string> }>;
    };
    expect(config.globalShortcut).toBe('Ctrl+Space');
    expect(Object.keys(config.mcpServers)).toEqual([
      'filesystem',
      'gatehouse-github',
      'gatehouse-postgres',
    ]);
    const github = config.mcpServers['gatehouse-github']!;
    expect(github.command).toBe(process.execPath);
    expect(github.args).toEqual([
      '--max-semi-space-size=8',
      '--max-old-space-size=256',
      join(ROOT, 'servers/github/dist/index.js'),
    ]);
    expect(github.env).toEqual({
      GITHUB_TOKEN_FILE: `${secrets}/github-token`,
      GITHUB_REPOS: 'acme/api',
    });
    // The flags the bin needs, from its shebang.
    expect(config.mcpServers['gatehouse-postgres']!.args).toEqual([
      '--liftoff-only',
      '--max-semi-space-size=8',
      '--max-old-space-size=256',
      join(ROOT, 'servers/postgres/dist/index.js'),
    ]);

    // The entry, as Claude Desktop would start it (plus where the test's GitHub is).
    const fake = await startGitHubFake({
      repos: githubSeed(),
      tokens: { [TOKEN]: { login: 'octo', repos: [] } },
    });
    mkdirSync(secrets, { recursive: true, mode: 0o700 });
    writeFileSync(join(secrets, 'github-token'), `${TOKEN}\n`, { mode: 0o600 });
    const connection = await connectStdio(github.command, github.args, {
      env: { ...github.env, GITHUB_API_URL: fake.url, PATH: process.env.PATH ?? '' },
    });
    try {
      const result = await connection.client.callTool({
        name: 'github_get_issue',
        arguments: { repo: 'acme/api', number: 1 },
      });
      expect(result.isError).toBeFalsy();
    } finally {
      await connection.close();
      await fake.close();
    }

    // Again, nothing new: nothing is written, no second backup. The value the config has is
    // kept (not the server's example value, which is never written into a real config).
    const same = await generate(home, ['github', 'postgres', '--write', '--secrets-dir', secrets]);
    expect(same.stdout).toMatch(/already has these entries .*nothing was changed/);
    expect(
      readdirSync(join(home, '.config/Claude')).filter((f) => f.includes('.bak-')),
    ).toHaveLength(1);
    // A change: the entry is replaced, not duplicated, and a second backup is kept.
    const again = await generate(home, ['github', '--write', '--secrets-dir', secrets], {
      GITHUB_REPOS: 'acme/web',
    });
    expect(again.stdout).toContain('(replaced gatehouse-github)');
    const after = JSON.parse(readFileSync(configFile, 'utf8')) as typeof config;
    expect(Object.keys(after.mcpServers)).toHaveLength(3);
    expect(after.mcpServers['gatehouse-github']!.env!.GITHUB_REPOS).toBe('acme/web');
    expect(
      readdirSync(join(home, '.config/Claude')).filter((f) => f.includes('.bak-')),
    ).toHaveLength(2);
  });

  it('never writes an example value into a real config: a variable without a value is refused by name', async () => {
    const home = mkdtempSync(join(tmpdir(), 'claude-home-'));
    const run = await generate(home, ['github', '--write']);
    expect(run.code).toBe(1);
    expect(run.stderr).toMatch(
      /^client-config: no value for GITHUB_REPOS \(gatehouse-github\): set it/,
    );
    expect(() => readdirSync(join(home, '.config/Claude'))).toThrow();
  });

  it("refuses a Node.js that is too old rather than write its path into the entry (the machine's Node 20)", async () => {
    const home = mkdtempSync(join(tmpdir(), 'claude-home-'));
    const old = await sh('env', [
      '-i',
      `HOME=${home}`,
      `PATH=${process.env.PATH ?? ''}`,
      'GITHUB_REPOS=acme/api',
      MACHINE_NODE,
      SCRIPT,
      'github',
      '--write',
    ]);
    expect(old.code).toBe(1);
    expect(old.stderr).toMatch(
      /^client-config: this is Node\.js 20\.\S+ \(\/usr\/bin\/node\); .*need Node\.js 22\.19 or later/,
    );
    expect(old.stdout).toBe('');
    expect(() => readdirSync(join(home, '.config/Claude'))).toThrow();
  });

  it('writes only JSON to a file through npm run (npm’s banner taken out), and explains connectors for a remote Claude Desktop', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'client-config-out-'));
    const file = join(dir, 'entry.json');
    const viaNpm = await sh('sh', [
      '-c',
      `cd ${JSON.stringify(ROOT)} && npm run client-config -- postgres > ${JSON.stringify(file)}`,
    ]);
    expect(viaNpm.code, viaNpm.stderr).toBe(0);
    expect(
      Object.keys((JSON.parse(readFileSync(file, 'utf8')) as { mcpServers: object }).mcpServers),
    ).toEqual(['gatehouse-postgres']);
    const home = mkdtempSync(join(tmpdir(), 'claude-home-'));
    const remote = await generate(home, ['jira', '--remote', 'https://jira.mcp.example.com/mcp']);
    expect(remote.code).toBe(0);
    expect(remote.stdout).toMatch(/^Claude Desktop connects to a remote server as a connector/);
    expect(remote.stdout).toContain(
      'Settings → Connectors → Add custom connector, URL https://jira.mcp.example.com/mcp',
    );
    expect(remote.stdout).not.toContain('mcpServers');
  });

  it('refuses a config file that is not JSON, and changes nothing', async () => {
    const home = mkdtempSync(join(tmpdir(), 'claude-home-'));
    const configFile = join(home, '.config/Claude/claude_desktop_config.json');
    mkdirSync(join(home, '.config/Claude'), { recursive: true });
    writeFileSync(configFile, '{ "mcpServers": { , }');
    const run = await generate(home, ['github', '--write']);
    expect(run.code).toBe(1);
    expect(run.stderr).toMatch(
      /claude_desktop_config\.json is not valid JSON .*nothing was changed/,
    );
    expect(readFileSync(configFile, 'utf8')).toBe('{ "mcpServers": { , }');
    expect(readdirSync(join(home, '.config/Claude'))).toEqual(['claude_desktop_config.json']);
  });

  it('prints other clients’ forms and names unknown servers', async () => {
    const home = mkdtempSync(join(tmpdir(), 'claude-home-'));
    const code = await generate(home, ['slack', '--client', 'claude-code']);
    expect(code.stdout).toMatch(
      /^claude mcp add gatehouse-slack --env SLACK_BOT_TOKEN_FILE=\S+slack-bot-token .*-- \S+node --max-semi-space-size=8 --max-old-space-size=256 \S+servers\/slack\/dist\/index\.js\n$/,
    );
    const remote = await generate(home, [
      'jira',
      '--client',
      'vscode',
      '--remote',
      'https://jira.mcp.example.com/mcp',
    ]);
    expect(JSON.parse(remote.stdout)).toMatchObject({
      servers: { 'gatehouse-jira': { type: 'http', url: 'https://jira.mcp.example.com/mcp' } },
    });
    const unknown = await generate(home, ['nosuch']);
    expect(unknown.code).toBe(1);
    // Every folder of servers/, whatever it holds (github, jira, postgres, slack today).
    expect(unknown.stderr).toMatch(
      new RegExp(
        `^client-config: unknown server "nosuch" \\(servers: ${serverNames().join(', ')}\\)`,
      ),
    );
    expect(serverNames()).toEqual(expect.arrayContaining(['github', 'jira', 'postgres', 'slack']));
  });
});
