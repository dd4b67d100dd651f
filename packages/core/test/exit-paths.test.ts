// Every way a process ends, with every audit witness configured: a refused start once kept
// running because the syslog witness's socket held Node alive (the trail and its witnesses were
// not on the closer stack). Exit paths tested: a start refused after the trail opened (its port
// taken; its audit file held by another server), SIGTERM and SIGINT over HTTP, stdin closing
// over stdio, an uncaught exception — each with the syslog and OTLP witnesses configured, both
// reachable and away. Each ends, with its exit code, and a reachable witness got the last
// checkpoint.
import { createServer } from 'node:net';
import type { Server } from 'node:net';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import {
  connectStdio,
  eventually,
  freePort,
  scaled,
  spawnServer,
  startOtlpReceiver,
  startRsyslog,
} from '@gatehouse/testkit';
import type { ServerProcess, TestWitness } from '@gatehouse/testkit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

const demoServer = fileURLToPath(new URL('./fixtures/demo-server.ts', import.meta.url));
const dir = mkdtempSync(join(tmpdir(), 'exit-paths-'));
/** Longer than a process may take to end once it should (witness delivery included). */
const ENDS_WITHIN = scaled(15_000);

let syslog: TestWitness;
let otlp: TestWitness;
let taken: Server;
let takenPort: number;
let away: { syslog: string; otlp: string };

beforeAll(async () => {
  [syslog, otlp] = await Promise.all([startRsyslog(), startOtlpReceiver()]);
  taken = createServer();
  await new Promise<void>((resolve) => taken.listen(0, '127.0.0.1', resolve));
  takenPort = (taken.address() as { port: number }).port;
  // Ports nothing listens on: witnesses that are away.
  const [a, b] = [await freePort(), await freePort()];
  away = { syslog: `tcp://127.0.0.1:${a}`, otlp: `http://127.0.0.1:${b}/v1/logs` };
});

afterAll(async () => {
  taken?.close();
  await Promise.all([syslog?.stop(), otlp?.stop()]);
});

const witnesses = (reachable: boolean) => ({
  GATEHOUSE_AUDIT_WITNESS_SYSLOG: reachable ? syslog.url : away.syslog,
  GATEHOUSE_AUDIT_WITNESS_OTLP: reachable ? otlp.url : away.otlp,
});

let n = 0;
/** A fresh audit file, the trail on it, the witnesses as asked. */
const env = (reachable: boolean, extra: Record<string, string> = {}) => ({
  GATEHOUSE_AUDIT_SINKS: 'file',
  GATEHOUSE_AUDIT_FILE: join(dir, `audit-${++n}.jsonl`),
  ...witnesses(reachable),
  ...extra,
});

/** The exit code, or a failure naming the path when the process does not end in time. */
async function ends(server: ServerProcess, what: string): Promise<number | null> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what}: still running`)), ENDS_WITHIN);
  });
  try {
    return await Promise.race([server.exited(), late]);
  } finally {
    clearTimeout(timer);
    server.child.kill('SIGKILL');
  }
}

/** Whether the syslog witness holds a checkpoint of the stream in `file`'s records. */
const witnessed = (stream: string) => syslog.text().includes(stream);

describe.each([true, false])('with every witness configured (reachable: %s)', (reachable) => {
  it('a start refused after the trail opened (its port taken) ends, exit 1', async () => {
    const server = await spawnServer(process.execPath, [demoServer], {
      env: env(reachable, { GATEHOUSE_TRANSPORT: 'http', GATEHOUSE_PORT: String(takenPort) }),
      waitForStart: false,
    });
    expect(await ends(server, 'port taken')).toBe(1);
    const refused = server.auditRecords();
    expect(refused).toEqual([]); // the trail is the file, not stderr
  });

  it('a second server on the same audit file is refused, exit 2, naming the variable', async () => {
    const shared = env(reachable, { GATEHOUSE_TRANSPORT: 'http', GATEHOUSE_PORT: '0' });
    const first = await spawnServer(process.execPath, [demoServer], { env: shared });
    try {
      const second = await spawnServer(process.execPath, [demoServer], {
        env: shared,
        waitForStart: false,
      });
      expect(await ends(second, 'second writer')).toBe(2);
      const said = second.logs.map((l) => l.raw ?? '').join('\n');
      expect(said).toMatch(/GATEHOUSE_AUDIT_FILE: .* is being written by process \d+ on /);
    } finally {
      expect(await first.stop('SIGTERM')).toBe(0);
    }
  });

  it.each(['SIGTERM', 'SIGINT'] as const)('%s over HTTP ends, exit 0', async (signal) => {
    const server = await spawnServer(process.execPath, [demoServer], {
      env: env(reachable, { GATEHOUSE_TRANSPORT: 'http', GATEHOUSE_PORT: '0' }),
    });
    const started = server.logs.find((l) => l.msg === 'server started');
    expect(started).toBeDefined();
    server.child.kill(signal);
    expect(await ends(server, signal)).toBe(0);
  });

  it('stdin closing over stdio ends, exit 0; an uncaught exception ends, exit 1', async () => {
    const stdio = await connectStdio(process.execPath, [demoServer], { env: env(reachable) });
    await stdio.client.callTool({ name: 'demo_noop', arguments: {} });
    await stdio.close();
    // (connectStdio's close ends stdin; the process exits on its own.)
    const crash = await connectStdio(process.execPath, [demoServer], { env: env(reachable) });
    const answer = await crash.client.callTool({ name: 'demo_crash', arguments: {} });
    expect(JSON.stringify(answer)).toContain('about to crash');
    await eventually(() => crash.pid !== null && !alive(crash.pid), Boolean, ENDS_WITHIN);
    await crash.close();
    if (reachable) await eventually(() => witnessed('audit/checkpoint'), Boolean, ENDS_WITHIN);
  });
});

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}
