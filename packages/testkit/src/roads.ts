import { createServer } from 'node:http';
import type { Client } from '@modelcontextprotocol/client';
import type { FakeFailure } from './http-fake.js';
import { resultText } from './results.js';

/**
 * Every road a client takes into a server — a tool call, a resource read, a prompt — as data, so
 * one check can run over all of them (the redirect matrix below; the hidden-character invariant
 * of each SaaS server's tests).
 */
export type Road =
  | {
      readonly kind: 'tool';
      readonly name: string;
      readonly arguments: Record<string, unknown>;
      readonly write?: boolean;
    }
  | { readonly kind: 'resource'; readonly uri: string }
  | { readonly kind: 'resources'; readonly name: 'resources/list' }
  | { readonly kind: 'prompt'; readonly name: string; readonly arguments: Record<string, string> };

/** What a road answered: an error (tool error or JSON-RPC error) or not, its text, the raw answer. */
export interface RoadAnswer {
  readonly error: boolean;
  readonly text: string;
  readonly raw: unknown;
}

/** A road in a line, for test names and reports. */
export function roadName(road: Road): string {
  return road.kind === 'resource'
    ? `resources/read ${road.uri}`
    : road.kind === 'resources'
      ? road.name
      : `${road.kind === 'tool' ? 'tools/call' : 'prompts/get'} ${road.name}`;
}

/** Takes one road with a real client; a JSON-RPC error is an answer too. */
export async function travel(client: Client, road: Road): Promise<RoadAnswer> {
  try {
    switch (road.kind) {
      case 'tool': {
        const raw = await client.callTool({ name: road.name, arguments: road.arguments });
        return { error: raw.isError === true, text: resultText(raw), raw };
      }
      case 'resource': {
        const raw = await client.readResource({ uri: road.uri });
        const text = raw.contents.map((c) => ('text' in c ? c.text : '')).join('\n');
        return { error: false, text, raw };
      }
      case 'resources': {
        const raw = await client.listResources();
        return { error: false, text: JSON.stringify(raw), raw };
      }
      case 'prompt': {
        const raw = await client.getPrompt({ name: road.name, arguments: road.arguments });
        return { error: false, text: JSON.stringify(raw.messages), raw };
      }
    }
  } catch (error) {
    return { error: true, text: (error as Error).message, raw: error };
  }
}

/** A vendor fake, as far as the redirect matrix needs one. */
export interface RedirectingFake {
  readonly url: string;
  readonly requests: string[];
  fail(failure: FakeFailure): void;
  clearFailures(): void;
}

/** The redirect statuses the matrix answers with. */
export const REDIRECT_STATUSES = [301, 302, 303, 307, 308] as const;

/** One cell of the matrix that broke a rule. */
export interface RedirectProblem {
  readonly road: string;
  readonly status: number;
  readonly target: string;
  readonly problem: string;
}

/**
 * The redirect matrix: every road × 301/302/303/307/308 × two targets — a place on the vendor
 * fake outside the allow-list (`inside`), and another host (a listener that records whoever
 * comes). The fake answers every request of the road with the redirect. Rules: nobody reaches
 * the other host; no request reaches `inside`; the vendor's state (`state()`) is unchanged; a
 * road that sent a request answers with an error. Returns what broke them, and how many cells
 * sent a request at all (a matrix where nothing was asked proves nothing).
 */
export async function redirectMatrix(options: {
  readonly client: Client;
  readonly fake: RedirectingFake;
  readonly roads: readonly Road[];
  /** A path on the fake (after its URL) outside the allow-list. */
  readonly inside: string;
  readonly state: () => string;
}): Promise<{ problems: RedirectProblem[]; asked: number; cells: number }> {
  const visits: string[] = [];
  const elsewhere = createServer((req, res) => {
    visits.push(`${req.method} ${req.url} auth=${req.headers.authorization !== undefined}`);
    res.writeHead(200, { 'content-type': 'application/json' }).end('{"ok":true}');
  });
  await new Promise<void>((resolve) => elsewhere.listen(0, '127.0.0.1', resolve));
  const port = (elsewhere.address() as { port: number }).port;
  const insidePath = new URL(`${options.fake.url.replace(/\/$/, '')}${options.inside}`).pathname;
  const targets = [
    `${options.fake.url.replace(/\/$/, '')}${options.inside}`,
    `http://127.0.0.1:${port}/collect${options.inside}`,
  ];
  const problems: RedirectProblem[] = [];
  let asked = 0;
  let cells = 0;
  try {
    for (const status of REDIRECT_STATUSES) {
      for (const target of targets) {
        for (const road of options.roads) {
          cells++;
          const before = options.state();
          const sent = options.fake.requests.length;
          options.fake.fail({ status, redirect: target, times: 1_000 });
          let answer: RoadAnswer;
          try {
            answer = await travel(options.client, road);
          } finally {
            options.fake.clearFailures();
          }
          const requests = options.fake.requests.slice(sent);
          const report = (problem: string) =>
            problems.push({ road: roadName(road), status, target, problem });
          if (requests.length > 0) asked++;
          if (visits.length > 0) report(`another host was reached: ${visits.splice(0).join('; ')}`);
          const followed = requests.filter((r) => r.split(' ')[1]!.startsWith(insidePath));
          if (followed.length > 0) {
            const more = followed.length > 3 ? ` (and ${followed.length - 3} more)` : '';
            report(`followed to ${followed.slice(0, 3).join('; ')}${more}`);
          }
          if (options.state() !== before) report('the vendor state changed');
          if (requests.length > 0 && !answer.error) {
            report(`answered as if nothing happened: ${answer.text.slice(0, 200)}`);
          }
        }
      }
    }
  } finally {
    elsewhere.closeAllConnections();
    await new Promise<void>((resolve) => elsewhere.close(() => resolve()));
  }
  return { problems, asked, cells };
}
