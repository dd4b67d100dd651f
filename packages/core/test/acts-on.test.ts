/**
 * `ctx.actsOn`: a target the handler resolves (a name to what it stands for in the caller's own
 * view upstream) is held to the allow-list exactly as a declared one, and is what the record
 * names.
 */
import {
  READ_ONLY_ANNOTATIONS,
  baseConfigSchema,
  defineServer,
  defineTool,
  loadConfig,
} from '@gatehouse/core';
import { createTestHarness } from '@gatehouse/core/testing';
import { connectInMemory, resultText } from '@gatehouse/testkit';
import type { Connection } from '@gatehouse/testkit';
import * as z from 'zod';
import { afterEach, expect, it } from 'vitest';

const open: Connection[] = [];
afterEach(async () => {
  for (const c of open.splice(0)) await c.close();
});

/** Aliases known only once the handler runs, as a person's channel names are. */
const ALIASES: Record<string, string> = { main: 'general', side: 'random' };

async function setup() {
  const config = loadConfig(baseConfigSchema, { GATEHOUSE_ALLOW_TARGETS: 'demo:board/general' });
  const harness = createTestHarness(config);
  const reached: string[] = [];
  const server = defineServer({
    name: 'acts-on',
    version: '1',
    tools: [
      defineTool({
        name: 'demo_alias',
        title: 'Read a board by alias',
        description: 'Resolves an alias in the handler.',
        access: 'read',
        annotations: READ_ONLY_ANNOTATIONS,
        input: z.strictObject({
          alias: z
            .string()
            .regex(/^[a-z]+$/)
            .describe('Alias'),
        }),
        handler: async ({ alias }, ctx) => {
          const board = ALIASES[alias] ?? alias;
          ctx.actsOn(`demo:board/${board}`);
          reached.push(board);
          return `board ${board}`;
        },
      }),
    ],
  });
  const connection = await connectInMemory(harness.factory(server));
  open.push(connection);
  return { client: connection.client, records: harness.records, reached };
}

it('refuses a resolved target outside the allow-list, and records the resolved target', async () => {
  const { client, records, reached } = await setup();
  const ok = await client.callTool({ name: 'demo_alias', arguments: { alias: 'main' } });
  expect(resultText(ok)).toBe('board general');
  const denied = await client.callTool({ name: 'demo_alias', arguments: { alias: 'side' } });
  expect(denied.isError).toBe(true);
  expect(resultText(denied)).toBe(
    'Denied: demo:board/random is outside the allowed targets (demo:board/general). Pick an allowed target.',
  );
  expect(reached).toEqual(['general']);
  expect(
    records.map((r) => [r.event.reason, r.target?.resource, r.policy?.decision, r.policy?.rule]),
  ).toEqual([
    ['ok', 'demo:board/general', 'allow', 'read_tool'],
    ['denied', 'demo:board/random', 'deny', 'allow_list'],
  ]);
});
