import { serverContract } from '@gatehouse/contract';
import { docs } from '../src/server.ts';
import { upstream } from './upstream.ts';

// What every Gatehouse server holds (packages/contract): the reviewed surface
// (test/__toolsnaps__/surface.json — after a deliberate change `npx vitest run -u` here, and
// review the diff), names and schemas, static descriptions, the deployment declaration, and one
// real call through test/upstream.ts.
serverContract(docs, upstream);
