/**
 * The receivers of audit checkpoints the tests run: a real rsyslog (Debian's `rsyslogd`, in the
 * foreground with a private configuration: imtcp on a free loopback port, every message's raw
 * text appended to a file) and a loopback OTLP/HTTP logs receiver that appends each export
 * request's JSON body to a file as one line — what a collector's file exporter writes.
 * `rsyslog` must be installed (`npm test` installs it: scripts/ensure-tools.mjs).
 */
import { spawn } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import {
  appendFileSync,
  existsSync,
  mkdtempSync,
  readFileSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { createServer } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freePort } from './redis.js';
import { eventually } from './results.js';
import { scaled } from './time.js';

/** A running receiver: where it listens, and the file it writes what it received to. */
export interface TestWitness {
  /** `tcp://127.0.0.1:<port>` (syslog) or `http://127.0.0.1:<port>/v1/logs` (OTLP). */
  readonly url: string;
  /** What it received so far, one message (or export request) a line. */
  readonly file: string;
  /** The file's text (empty when nothing arrived yet). */
  text(): string;
  stop(): Promise<void>;
}

/** Starts rsyslogd on a free loopback port; resolves once it accepts connections. */
export async function startRsyslog(
  binary = existsSync('/usr/sbin/rsyslogd') ? '/usr/sbin/rsyslogd' : 'rsyslogd',
): Promise<TestWitness> {
  const dir = mkdtempSync(join(tmpdir(), 'gatehouse-rsyslog-'));
  const port = await freePort();
  const file = join(dir, 'witness.log');
  writeFileSync(
    join(dir, 'rsyslog.conf'),
    [
      `global(workDirectory="${dir}")`,
      'module(load="imtcp")',
      `input(type="imtcp" port="${port}" address="127.0.0.1")`,
      'template(name="raw" type="string" string="%rawmsg%\\n")',
      `*.* action(type="omfile" file="${file}" template="raw")`,
      '',
    ].join('\n'),
  );
  const child: ChildProcess = spawn(
    binary,
    ['-n', '-f', join(dir, 'rsyslog.conf'), '-i', join(dir, 'rsyslogd.pid')],
    { stdio: ['ignore', 'pipe', 'pipe'] },
  );
  let said = '';
  child.stdout?.on('data', (c: Buffer) => (said += c.toString()));
  child.stderr?.on('data', (c: Buffer) => (said += c.toString()));
  const failed = new Promise<never>((_, reject) => {
    child.once('error', (error) =>
      reject(new Error(`cannot run ${binary} (${error.message}): apt-get install rsyslog`)),
    );
    child.once('exit', (code) => reject(new Error(`rsyslogd exited (${code}):\n${said}`)));
  });
  failed.catch(() => undefined);
  // Ready when the port takes a connection.
  const { createConnection } = await import('node:net');
  const accepts = () =>
    new Promise<boolean>((resolve) => {
      const s = createConnection({ host: '127.0.0.1', port }, () => {
        s.destroy();
        resolve(true);
      });
      s.once('error', () => resolve(false));
    });
  await Promise.race([eventually(accepts, (ok) => ok, scaled(10_000)), failed]);
  return {
    url: `tcp://127.0.0.1:${port}`,
    file,
    text: () => (existsSync(file) ? readFileSync(file, 'utf8') : ''),
    stop: async () => {
      if (child.exitCode === null) {
        await new Promise<void>((resolve) => {
          child.once('exit', () => resolve());
          child.kill('SIGTERM');
        });
      }
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/**
 * A loopback OTLP/HTTP logs receiver: answers a POST to /v1/logs as a collector does and appends
 * the request's JSON body to its file. As the OTLP specification's "OTLP/HTTP" section
 * (https://opentelemetry.io/docs/specs/otlp/#otlphttp) says: the JSON encoding is the one sent with
 * `Content-Type: application/json` (anything else is refused here, 415 — this receiver reads no
 * protobuf), the default logs path is `/v1/logs`, and success is 200 with an
 * ExportLogsServiceResponse (`{}`); a body that does not parse is a 400.
 */
export async function startOtlpReceiver(): Promise<TestWitness> {
  const dir = mkdtempSync(join(tmpdir(), 'gatehouse-otlp-'));
  const file = join(dir, 'logs.jsonl');
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      if (req.method !== 'POST' || req.url !== '/v1/logs') {
        res.writeHead(404).end();
        return;
      }
      if (!/^application\/json\b/.test(req.headers['content-type'] ?? '')) {
        res.writeHead(415).end();
        return;
      }
      const body = Buffer.concat(chunks).toString('utf8');
      try {
        // One line per request, as a file exporter writes it.
        appendFileSync(file, `${JSON.stringify(JSON.parse(body))}\n`);
      } catch {
        res.writeHead(400, { 'content-type': 'application/json' }).end('{}');
        return;
      }
      res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  return {
    url: `http://127.0.0.1:${port}/v1/logs`,
    file,
    text: () => (existsSync(file) ? readFileSync(file, 'utf8') : ''),
    stop: async () => {
      await new Promise((resolve) => server.close(resolve));
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
