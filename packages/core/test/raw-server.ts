import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { eventually, initializeRequest } from '@gatehouse/testkit';

const demoServer = fileURLToPath(new URL('./fixtures/demo-server.ts', import.meta.url));

/**
 * Request ids of every shape a client may send: the falsy ones ('' and 0), strings that look like
 * other things, hidden and lone-surrogate characters, the integer limits (fuzz.test.ts and
 * sessions.test.ts).
 */
export const ID_SHAPES: ReadonlyArray<string | number> = [
  '',
  0,
  '0',
  ' ',
  '\u0000',
  'null',
  '\ud800',
  '🏴\u{e0067}\u{e007f}',
  '"',
  '\n',
  -1,
  Number.MAX_SAFE_INTEGER,
  -Number.MAX_SAFE_INTEGER,
  2 ** 31,
  '1',
  'é',
  'x'.repeat(1000),
  '{}',
  'id',
];

/** Runs the demo server with raw pipes: we see every byte it writes. */
export function rawServer(env: Record<string, string> = {}) {
  const child = spawn(process.execPath, [demoServer], { env, stdio: ['pipe', 'pipe', 'pipe'] });
  const stdoutLines: string[] = [];
  let stdoutRaw = '';
  let stderr = '';
  child.stdout.setEncoding('utf8').on('data', (c: string) => (stdoutRaw += c));
  createInterface({ input: child.stdout }).on('line', (l) => stdoutLines.push(l));
  child.stderr.setEncoding('utf8').on('data', (c: string) => (stderr += c));
  const exit = once(child, 'exit') as Promise<[number | null, NodeJS.Signals | null]>;
  const send = (message: unknown): void => {
    child.stdin.write(`${JSON.stringify(message)}\n`);
  };
  /** Writes one line as it is (for input that is not valid JSON-RPC). */
  const sendLine = (line: string | Buffer): void => {
    child.stdin.write(line);
    child.stdin.write('\n');
  };
  const waitForResponse = async (
    id: number | string | null,
    after = 0,
  ): Promise<Record<string, unknown>> => {
    const find = () =>
      stdoutLines
        .slice(after)
        .map((line) => JSON.parse(line) as Record<string, unknown>)
        .find((parsed) => parsed.id === id);
    const found = await eventually(find, (parsed) => parsed !== undefined);
    if (found === undefined)
      throw new Error(`no response ${id}; stdout: ${stdoutRaw}; stderr: ${stderr}`);
    return found;
  };
  /** initialize → answer → initialized, the 2025-era opening. */
  const handshake = async (): Promise<void> => {
    send(initializeRequest());
    await waitForResponse(1);
    send({ jsonrpc: '2.0', method: 'notifications/initialized' });
  };
  const callTool = (id: number, name: string, args: Record<string, unknown>): void =>
    send({ jsonrpc: '2.0', id, method: 'tools/call', params: { name, arguments: args } });
  return {
    child,
    send,
    sendLine,
    callTool,
    handshake,
    waitForResponse,
    exit,
    stdoutLines,
    stdoutRaw: () => stdoutRaw,
    stderr: () => stderr,
  };
}
