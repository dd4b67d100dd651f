/**
 * Builds the images with buildah and runs them the way a container runtime would, without a
 * Docker engine: the image's root filesystem mounted READ-ONLY, a fresh tmpfs on /tmp, /proc and
 * /dev bound in, the image's user, environment, working directory and entry point, and a new PID
 * namespace so the server is PID 1 (as it is in Kubernetes). `buildah run` cannot make the root
 * read-only, which is the point of the check, hence the mount + unshare + chroot by hand.
 */
import { execFileSync, spawn } from 'node:child_process';
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  readdirSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { createInterface } from 'node:readline';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

export const ROOT = fileURLToPath(new URL('../../', import.meta.url));
/** The host's unshare, by path: a container's environment (PATH=/usr/local/bin) has none. */
const UNSHARE = execFileSync('sh', ['-c', 'command -v unshare'], { encoding: 'utf8' }).trim();

/** Runs a command; resolves with its exit code and output (never rejects on a non-zero exit). */
export function sh(
  command: string,
  args: readonly string[],
  options: { timeoutMs?: number; env?: Record<string, string> } = {},
): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(command, [...args], {
      stdio: ['ignore', 'pipe', 'pipe'],
      cwd: ROOT,
      ...(options.env ? { env: options.env } : {}),
    });
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (c: string) => (stdout += c));
    child.stderr.setEncoding('utf8').on('data', (c: string) => (stderr += c));
    child.once('error', reject);
    const timer =
      options.timeoutMs === undefined
        ? undefined
        : setTimeout(() => child.kill('SIGKILL'), options.timeoutMs);
    child.once('close', (code) => {
      if (timer !== undefined) clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
  });
}

/** Runs a command that must succeed; resolves with its trimmed stdout. */
export async function must(command: string, args: readonly string[]): Promise<string> {
  const result = await sh(command, args);
  if (result.code !== 0) {
    throw new Error(
      `${command} ${args.join(' ')} failed (${result.code}):\n${result.stderr.slice(-4000)}`,
    );
  }
  return result.stdout.trim();
}

/** The servers an image is built for: every directory under servers/ with a package.json. */
export function serverNames(): string[] {
  return readdirSync(join(ROOT, 'servers'))
    .filter((name) => existsSync(join(ROOT, 'servers', name, 'package.json')))
    .sort();
}

/**
 * A server's built module (its package's `exports`, from servers/<id>/dist), by folder: the deploy
 * package lists no server as a dependency, so a fifth one is found as the four are.
 */
export async function serverModule(id: string): Promise<unknown> {
  const entry = join(ROOT, 'servers', id, 'dist/server.js');
  if (!existsSync(entry))
    throw new Error(`servers/${id} is not built: run \`npm run build\` first`);
  return (await import(pathToFileURL(entry).href)) as unknown;
}

/** The base image the Dockerfile pins (its NODE_IMAGE default). */
export function pinnedBase(): string {
  const dockerfile = readFileSync(join(ROOT, 'docker/Dockerfile'), 'utf8');
  const match = /^ARG NODE_IMAGE=(\S+)$/m.exec(dockerfile);
  if (match === null) throw new Error('docker/Dockerfile: no ARG NODE_IMAGE=… default');
  return match[1]!;
}

/**
 * The base image, present locally: the stand-in for `node:24-bookworm-slim` that
 * docker/container-base.sh builds (where there is no registry), tagged with the exact
 * release the Dockerfile pins when it is that release. Returns the NODE_IMAGE to build with.
 */
export async function ensureBase(): Promise<string> {
  const pinned = pinnedBase();
  const present = async (tag: string) =>
    (await sh('buildah', ['images', '--quiet', tag])).stdout.trim() !== '';
  if (await present(pinned)) return pinned;
  const standIn = 'docker.io/library/node:24-bookworm-slim';
  if (!(await present(standIn))) {
    const script = join(ROOT, 'docker/container-base.sh');
    if (!existsSync(script)) {
      throw new Error(`the base image ${pinned} is missing and ${script} is not there to build it`);
    }
    await must('bash', [script]);
  }
  const container = await must('buildah', ['from', '--pull=never', standIn]);
  const version = await must('buildah', [
    'run',
    '--isolation',
    'chroot',
    container,
    '--',
    'node',
    '--version',
  ]);
  await must('buildah', ['rm', container]);
  if (pinned.includes(`:${version.replace(/^v/, '')}-`)) {
    await must('buildah', ['tag', standIn, pinned]);
    return pinned;
  }
  // The stand-in carries another Node 24 release than the pin: build on it, and say so.
  process.stderr.write(
    `images: the local base has Node ${version}, the Dockerfile pins ${pinned}; building on ${standIn}\n`,
  );
  return standIn;
}

/** How the images are built without a Docker engine or a registry (docs/deploy.md says the same). */
export const BUILD_FLAGS = [
  '--isolation',
  'chroot',
  '--pull=never',
  '--layers',
  '--format',
  'docker',
];

/** Builds the image of one server; resolves with its tag and the build time. */
export async function buildImage(
  server: string,
  nodeImage: string,
): Promise<{ tag: string; seconds: number }> {
  const tag = `localhost/gatehouse-${server}:test`;
  const revision = (await sh('git', ['rev-parse', '--short', 'HEAD'])).stdout.trim() || 'unknown';
  const { version } = JSON.parse(
    readFileSync(join(ROOT, 'servers', server, 'package.json'), 'utf8'),
  ) as { version: string };
  const started = Date.now();
  await must('buildah', [
    'bud',
    ...BUILD_FLAGS,
    '--build-arg',
    `SERVER=${server}`,
    '--build-arg',
    `NODE_IMAGE=${nodeImage}`,
    '--build-arg',
    `REVISION=${revision}`,
    '--build-arg',
    `VERSION=${version}`,
    '-t',
    tag,
    '-f',
    'docker/Dockerfile',
    '.',
  ]);
  return { tag, seconds: (Date.now() - started) / 1000 };
}

/** A GnuPG key that signs images: its home folder and fingerprint. */
export interface Signer {
  readonly home: string;
  readonly fingerprint: string;
}

/** A new Ed25519 signing key in a GnuPG home of its own (no passphrase), as a release key. */
export async function makeSigner(): Promise<Signer> {
  const home = mkdtempSync('/tmp/gatehouse-gpg-');
  const gpg = (args: string[]) => must('gpg', ['--homedir', home, '--batch', ...args]);
  await gpg([
    '--passphrase',
    '',
    '--quick-generate-key',
    'Gatehouse images <images@gatehouse.example>',
    'ed25519',
    'sign',
    'never',
  ]);
  const colons = await gpg(['--with-colons', '--list-secret-keys']);
  const fingerprint = /^fpr:+([0-9A-F]{40}):/m.exec(colons)?.[1];
  if (fingerprint === undefined) throw new Error(`gpg made no key:\n${colons}`);
  return { home, fingerprint };
}

/** Where a signed image is published in the tests (the signature names it). */
export const PUBLISHED = (tag: string) =>
  tag.replace(/^localhost\//, 'registry.example.com/gatehouse/').replace(/:test$/, ':0.1.0');

/**
 * Signs an image as docs/deploy.md says: `skopeo standalone-sign` of its manifest (the
 * containers/image "simple signing" format podman and CRI-O verify with a `signedBy` policy),
 * under the name it is published as. Returns the manifest and the signature files.
 */
export async function signImage(
  tag: string,
  signer: Signer,
): Promise<{ manifest: string; signature: string }> {
  const dir = mkdtempSync('/tmp/gatehouse-sig-');
  const manifest = join(dir, 'manifest.json');
  const signature = join(dir, 'signature');
  const raw = await sh('skopeo', ['inspect', '--raw', `containers-storage:${tag}`]);
  if (raw.code !== 0) throw new Error(`skopeo inspect ${tag}: ${raw.stderr}`);
  writeFileSync(manifest, raw.stdout);
  await must('env', [
    `GNUPGHOME=${signer.home}`,
    'skopeo',
    'standalone-sign',
    manifest,
    PUBLISHED(tag),
    signer.fingerprint,
    '-o',
    signature,
  ]);
  return { manifest, signature };
}

/**
 * Verifies a signature of the image published as `reference` against a manifest, as a deployer
 * does (`skopeo standalone-verify`); exit 0 and "Signature verified using fingerprint …" when it
 * holds.
 */
export function verifyImage(
  manifest: string,
  reference: string,
  signature: string,
  signer: Signer,
) {
  return sh('env', [
    `GNUPGHOME=${signer.home}`,
    'skopeo',
    'standalone-verify',
    manifest,
    reference,
    signer.fingerprint,
    signature,
  ]);
}

/** The image's configuration as a runtime reads it (Docker format, with the health check). */
export interface ImageConfig {
  User: string;
  Env: string[];
  Entrypoint: string[];
  Cmd: string[] | null;
  WorkingDir: string;
  Labels: Record<string, string>;
  Healthcheck?: { Test: string[] };
  ExposedPorts?: Record<string, unknown>;
}

export async function imageConfig(tag: string): Promise<ImageConfig> {
  const inspected = JSON.parse(await must('buildah', ['inspect', '--type', 'image', tag])) as {
    Docker: { config: ImageConfig };
  };
  return inspected.Docker.config;
}

/** Size of the image in bytes (all layers, the base included). */
export async function imageBytes(tag: string): Promise<number> {
  return Number(await must('podman', ['image', 'inspect', '--format', '{{.Size}}', tag]));
}

/** A running container. */
export interface Container {
  /** The server's PID on this machine (PID 1 inside its namespace). */
  readonly pid: number;
  /** The container's root filesystem as mounted here (read-only). */
  readonly root: string;
  /** Log lines on stderr, parsed when JSON. */
  readonly logs: Array<Record<string, unknown>>;
  /** Everything written to stdout (the audit stream by default). */
  stdout(): string;
  /** Runs a command inside the container's filesystem as its user. */
  exec(args: readonly string[]): Promise<{ code: number | null; stdout: string; stderr: string }>;
  /**
   * How to start another process of the image (its entry point) in this container's filesystem,
   * as its user, with the image's environment and `env` on top (not this container's run env):
   * for a client that spawns it itself, as a registry client runs `docker run -i`.
   */
  entrypoint(env: Record<string, string>): {
    command: string;
    args: string[];
    env: Record<string, string>;
  };
  waitForLog(predicate: (line: Record<string, unknown>) => boolean, ms?: number): Promise<void>;
  /** Sends a signal to the server; resolves with the exit code. */
  stop(signal?: NodeJS.Signals): Promise<number | null>;
  /** Unmounts and removes the container. */
  remove(): Promise<void>;
}

/**
 * Starts `tag` with `env` added to the image's environment. `volumes` maps container paths to
 * host directories mounted read-write (an audit volume).
 */
export async function runContainer(
  tag: string,
  env: Record<string, string>,
  volumes: Record<string, string> = {},
): Promise<Container> {
  const config = await imageConfig(tag);
  const name = await must('buildah', ['from', '--pull=never', tag]);
  const merged = await must('buildah', ['mount', name]);
  const root = mkdtempSync('/tmp/gatehouse-ro-');
  const mounts: string[] = [];
  const mount = async (args: string[], target: string) => {
    await must('mount', [...args, target]);
    mounts.push(target);
  };
  await mount(['--bind', merged], root);
  await must('mount', ['-o', 'remount,ro,bind', root]);
  await mount(['-t', 'tmpfs', '-o', 'size=64m,mode=1777', 'tmpfs'], join(root, 'tmp'));
  await mount(['--rbind', '/proc'], join(root, 'proc'));
  await mount(['--rbind', '/dev'], join(root, 'dev'));
  for (const [inside, host] of Object.entries(volumes)) {
    mkdirSync(host, { recursive: true });
    await mount(['--bind', host], join(root, inside));
  }
  const [uid = '0', gid = uid] = (config.User || '0').split(':');
  const imageEnv: Record<string, string> = Object.fromEntries(
    config.Env.map((kv) => [kv.slice(0, kv.indexOf('=')), kv.slice(kv.indexOf('=') + 1)]),
  );
  const environment = { ...imageEnv, ...env };
  const command = [...config.Entrypoint, ...(config.Cmd ?? [])];
  // A command in the container: its root, user, environment and working directory — entered by
  // the host's unshare (util-linux), so the image needs nothing of its own to start a process
  // (it has no shell and no env).
  const inside = (args: readonly string[]) => [
    `--root=${root}`,
    `--wd=${config.WorkingDir || '/'}`,
    '--setuid',
    uid,
    '--setgid',
    gid,
    '--',
    ...args,
  ];
  const child = spawn(UNSHARE, ['--pid', '--fork', '--kill-child', ...inside(command)], {
    stdio: ['ignore', 'pipe', 'pipe'],
    env: environment,
  });
  const logs: Array<Record<string, unknown>> = [];
  const listeners = new Set<() => void>();
  let stdout = '';
  child.stdout.setEncoding('utf8').on('data', (c: string) => (stdout += c));
  createInterface({ input: child.stderr }).on('line', (line) => {
    let parsed: Record<string, unknown>;
    try {
      parsed = JSON.parse(line) as Record<string, unknown>;
    } catch {
      parsed = { raw: line };
    }
    logs.push(parsed);
    for (const l of listeners) l();
  });
  const exited = new Promise<number | null>((resolve) => {
    child.once('exit', (code) => resolve(code));
    // unshare itself could not start: said in the log a wait reports, never a silent hang.
    child.once('error', (error) => {
      logs.push({ raw: `${UNSHARE}: ${error.message}` });
      for (const l of listeners) l();
      resolve(null);
    });
  });

  // The server: unshare's child (node, which runs itself again with its flags: the same pid).
  let pid = 0;
  for (let i = 0; i < 100 && pid === 0; i++) {
    const children = join('/proc', String(child.pid), 'task', String(child.pid), 'children');
    pid = existsSync(children)
      ? Number(readFileSync(children, 'utf8').trim().split(' ')[0] || 0)
      : 0;
    if (pid === 0) await new Promise((r) => setTimeout(r, 20));
  }

  const waitForLog = (predicate: (line: Record<string, unknown>) => boolean, ms = 30_000) =>
    new Promise<void>((resolve, reject) => {
      const check = () => {
        if (logs.some(predicate)) {
          listeners.delete(check);
          clearTimeout(timer);
          resolve();
        }
      };
      const timer = setTimeout(() => {
        listeners.delete(check);
        reject(
          new Error(
            `no such log line within ${ms} ms; logs:\n${JSON.stringify(logs, null, 1).slice(-3000)}`,
          ),
        );
      }, ms);
      listeners.add(check);
      check();
    });

  return {
    pid,
    root,
    logs,
    stdout: () => stdout,
    // As a runtime's exec does: the container's user, environment and working directory.
    exec: (args) => sh(UNSHARE, inside(args), { env: environment }),
    entrypoint: (extra) => ({
      command: UNSHARE,
      args: inside(command),
      env: { ...imageEnv, ...extra },
    }),
    waitForLog,
    stop: async (signal = 'SIGTERM') => {
      if (child.exitCode === null) process.kill(pid, signal);
      return exited;
    },
    remove: async () => {
      if (child.exitCode === null) child.kill('SIGKILL');
      await exited;
      for (const target of mounts.reverse()) await sh('umount', ['-R', target]);
      rmSync(root, { recursive: true, force: true });
      await sh('buildah', ['umount', name]);
      await sh('buildah', ['rm', name]);
    },
  };
}
