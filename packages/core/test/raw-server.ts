import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { initializeRequest } from '@gatehouse/testkit';

const demoServer = fileURLToPath(new URL('./fixtures/demo-server.ts', import.meta.url));

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
    for (let i = 0; i < 400; i++) {
      for (const line of stdoutLines.slice(after)) {
        const parsed = JSON.parse(line) as { id?: number };
        if (parsed.id === id) return parsed;
      }
      await new Promise((r) => setTimeout(r, 25));
    }
    throw new Error(`no response ${id}; stdout: ${stdoutRaw}; stderr: ${stderr}`);
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
