import { surfaceSnapshotOf } from '@gatehouse/core/docs';
import { expect, it } from 'vitest';
import { docs } from '../src/server.ts';

// What a model is told — every tool's name, description, input and output schema and
// annotations, the resources, templates and prompts — is a committed file: any change to it is a
// visible diff in review. After a deliberate change: `npx vitest run -u` here, and review the diff.

it('what the model is told matches the reviewed snapshot (test/__toolsnaps__/surface.json)', async () => {
  await expect(await surfaceSnapshotOf(docs)).toMatchFileSnapshot('./__toolsnaps__/surface.json');
});
