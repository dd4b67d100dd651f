// What every conversation pays before the first call (issue 35): each server's tools/list and
// instructions, in bytes as the client receives them, against the reference server of its kind
// listed in the same run (spawned over stdio with placeholder credentials: listing needs none).
//   node bench/listing.mjs   (after a build; `npm run bench` builds first and runs it)
// Ours is read from the reviewed surface snapshots (servers/<id>/test/__toolsnaps__/surface.json,
// the example configuration with write tools on), listed as by default: no output schemas
// (GATEHOUSE_STRUCTURED_OUTPUT is off) and no `access`, which is the snapshot's own note.
import { readFileSync, readdirSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { connectStdio } from '@gatehouse/testkit';
import { referenceBin } from './servers.mjs';

const here = (path) => fileURLToPath(new URL(path, import.meta.url));
const PATH = process.env.PATH ?? '';

/**
 * The reference of each server, as bench/<id>.mjs compares against it, with what it needs to
 * start. DBHub (`@bytebase/dbhub`, the most used Postgres server on npm) is not installed — its
 * database drivers are most of its weight —; its listing is given as issue 35 measured it
 * (1 489–2 102 B, two tools), beside server-postgres measured here.
 */
const PEERS = {
  postgres: {
    name: '@modelcontextprotocol/server-postgres@0.6.2',
    args: [
      referenceBin('@modelcontextprotocol/server-postgres', 'mcp-server-postgres'),
      'postgresql://127.0.0.1:9/none',
    ],
    env: {},
    cited: { name: 'DBHub 1.4 (cited, not run)', bytes: 2102, tools: 2 },
  },
  github: {
    name: '@modelcontextprotocol/server-github@2025.4.8',
    args: [referenceBin('@modelcontextprotocol/server-github', 'mcp-server-github')],
    env: { GITHUB_PERSONAL_ACCESS_TOKEN: 'github_pat_placeholder' },
  },
  slack: {
    name: '@modelcontextprotocol/server-slack@2025.4.25',
    args: [referenceBin('@modelcontextprotocol/server-slack', 'mcp-server-slack')],
    env: { SLACK_BOT_TOKEN: 'xoxb-placeholder', SLACK_TEAM_ID: 'T0PLACEHOLD' },
  },
  jira: {
    name: '@aashari/mcp-server-atlassian-jira@3.3.0',
    args: [fileURLToPath(import.meta.resolve('@aashari/mcp-server-atlassian-jira/dist/index.js'))],
    env: {
      ATLASSIAN_SITE_NAME: 'placeholder',
      ATLASSIAN_USER_EMAIL: 'bench@example.com',
      ATLASSIAN_API_TOKEN: 'placeholder',
    },
  },
};

/** A peer's tools/list result and instructions, in bytes, over stdio. */
async function peerListing({ args, env }) {
  const connection = await connectStdio(process.execPath, args, {
    env: { PATH, ...env },
    stderr: 'ignore',
  });
  try {
    const listed = await connection.client.listTools();
    return {
      tools: listed.tools.length,
      bytes: Buffer.byteLength(JSON.stringify({ tools: listed.tools })),
      instructions: Buffer.byteLength(connection.client.getInstructions() ?? ''),
    };
  } finally {
    await connection.close();
  }
}

const rows = [];
for (const id of readdirSync(here('../servers')).sort()) {
  let surface;
  try {
    surface = JSON.parse(
      readFileSync(here(`../servers/${id}/test/__toolsnaps__/surface.json`), 'utf8'),
    );
  } catch {
    continue;
  }
  const tools = surface.tools.map(({ access: _a, outputSchema: _o, ...tool }) => tool);
  const ours = {
    tools: tools.length,
    bytes: Buffer.byteLength(JSON.stringify({ tools })),
    instructions: Buffer.byteLength(surface.server.instructions ?? ''),
  };
  const peer = PEERS[id];
  rows.push({
    id,
    ours,
    peer: peer ? { name: peer.name, ...(await peerListing(peer)) } : undefined,
    cited: peer?.cited,
  });
}

for (const { id, ours, peer, cited } of rows) {
  console.log(
    `${id.padEnd(9)} ours ${ours.bytes} B (${ours.tools} tools) + ${ours.instructions} B instructions` +
      (peer
        ? ` | ${peer.name} ${peer.bytes} B (${peer.tools} tools) + ${peer.instructions} B`
        : '') +
      (cited ? ` | ${cited.name} ${cited.bytes} B (${cited.tools} tools)` : ''),
  );
}
writeFileSync(
  here('./results/listing.json'),
  `${JSON.stringify({ date: new Date().toISOString(), node: process.version, rows }, null, 2)}\n`,
);
