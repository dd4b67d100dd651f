#!/usr/bin/env node
// Renders the deployment of every server under servers/ from what its package.json declares
// (`gatehouse.deploy`: Compose port and profile, the upstream credential, example settings,
// egress, extra Compose services), so a new server appears in Compose and Kustomize without an
// edit outside its folder (docs/adding-a-server.md, ADR 0018). It writes — committed, so a clone
// can `docker compose up` and a reader sees the manifests; the tests fail when they drift from
// servers/* (run it after changing a declaration):
//
//   docker/compose.yaml                       the Compose stack
//   docker/k8s/servers/<id>/kustomization.yaml one server: the template, named and configured
//   docker/k8s/base/kustomization.yaml        the namespace, Redis and every server
//   docker/k8s/overlays/example/              the example Secrets (placeholders) and Ingress
//
// The hand-written parts stay where they are: docker/k8s/server/ (the template every server is
// made from), docker/k8s/base/{namespace,redis}.yaml, docker/Dockerfile.
// Usage: node docker/render.mjs   (npm run deploy:render)
import { existsSync, mkdirSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parse, stringify } from 'yaml';

export const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..');
const DOCKER = join(ROOT, 'docker');
const DOMAIN = 'mcp.example.com';
/** The drain on SIGTERM (GATEHOUSE_DRAIN_MS) and the stop grace around it: drain + preStop + margin. */
const DRAIN_MS = 25_000;
const GRACE_S = 40;
/** Public addresses only: no cluster, private, carrier-grade NAT, loopback or metadata range. */
const PRIVATE = [
  '10.0.0.0/8',
  '172.16.0.0/12',
  '192.168.0.0/16',
  '169.254.0.0/16',
  '100.64.0.0/10',
  '127.0.0.0/8',
];

/**
 * Every server's declaration, checked: `{ id, dir, version, deploy }` sorted by id. Throws on a
 * declaration that is missing or malformed, naming the file and the field.
 */
export function declarations(root = ROOT) {
  const servers = [];
  for (const id of readdirSync(join(root, 'servers')).sort()) {
    const dir = join(root, 'servers', id);
    const file = join(dir, 'package.json');
    if (!existsSync(file)) continue;
    const manifest = JSON.parse(readFileSync(file, 'utf8'));
    const deploy = manifest.gatehouse?.deploy;
    const where = `servers/${id}/package.json gatehouse.deploy`;
    const fail = (what) => {
      throw new Error(`${where}: ${what}`);
    };
    if (deploy === undefined) fail('missing (see docs/adding-a-server.md, "Deployment")');
    if (!/^[a-z][a-z0-9-]{1,30}$/.test(id)) fail(`the folder name "${id}" is not a server id`);
    if (!Number.isInteger(deploy.port) || deploy.port < 1024 || deploy.port > 65535)
      fail('port must be a port number for Compose (1024–65535)');
    const up = deploy.upstream;
    if (typeof up?.variable !== 'string' || !/^[A-Z][A-Z0-9_]+$/.test(up.variable))
      fail('upstream.variable must name the variable of the upstream credential');
    if (typeof up.key !== 'string' || !/^[a-z][a-z0-9-]*$/.test(up.key))
      fail('upstream.key must name the key of the credential in its Secret (token, url…)');
    if (typeof up.placeholder !== 'string' || !up.placeholder.includes('REPLACE-ME'))
      fail('upstream.placeholder must be an example value containing REPLACE-ME');
    if (up.egress !== 'https' && !Number.isInteger(up.egress?.port))
      fail('upstream.egress must be "https" or { "port": N, "note": "…" }');
    const identity = deploy.identity;
    if (identity !== undefined && !/^[A-Z][A-Z0-9_]+_SECRET$/.test(identity.variable ?? ''))
      fail('identity.variable must name the variable of the OAuth client secret for user mode');
    for (const name of Object.keys(deploy.settings ?? {}))
      if (!/^[A-Z][A-Z0-9_]+$/.test(name)) fail(`settings: "${name}" is not a variable name`);
    servers.push({ id, dir, version: manifest.version, deploy });
  }
  const ports = servers.map((s) => s.deploy.port);
  const taken = ports.find((p, n) => ports.indexOf(p) !== n);
  if (taken !== undefined) throw new Error(`two servers declare the Compose port ${taken}`);
  return servers;
}

/**
 * Redis's configuration for the rate limits: a password, protected mode (refuses every client
 * that has not authenticated), no persistence (the counters are short-lived). A secret: it holds
 * the password.
 */
export function redisConf(password) {
  return `requirepass ${password}\nprotected-mode yes\nsave ""\nappendonly no\n`;
}

/**
 * The file name of a server's OAuth client secret for user mode (ADR 0026) in docker/secrets/
 * (`slack_oauth_client_secret`), for a server that declares `identity`.
 */
export const identitySecretFile = (s) => `${s.id}_oauth_client_secret`;

/** The file name of a server's upstream credential in docker/secrets/ (`github_token`). */
export const secretFile = (s) => `${s.id}_${s.deploy.upstream.key.replace(/-/g, '_')}`;

const HEADER = (what) =>
  `# GENERATED by docker/render.mjs from servers/*/package.json (gatehouse.deploy) — ${what}.\n# Do not edit: change the declaration or the generator, then npm run deploy:render.\n`;

/** A bind-mount source relative to a server's folder, made relative to docker/. */
function fromDocker(server, volume) {
  const [source, ...rest] = volume.split(':');
  if (!source.startsWith('./') && !source.startsWith('../')) return volume;
  return [relative(DOCKER, join(server.dir, source)), ...rest].join(':');
}

function compose(servers) {
  const services = {
    redis: {
      image: 'docker.io/library/redis:7.0-bookworm',
      // Its configuration is a secret file (make-secrets.mjs): requirepass, protected mode, no
      // persistence. The servers connect with the password in GATEHOUSE_REDIS_URL_FILE.
      command: ['redis-server', '/run/secrets/redis_conf'],
      secrets: ['redis_conf'],
      read_only: true,
      user: '999:999',
      tmpfs: ['/data:size=64m'],
      cap_drop: ['ALL'],
      security_opt: ['no-new-privileges:true'],
      restart: 'unless-stopped',
    },
  };
  const secrets = {
    api_keys: { file: './secrets/api_keys.json' },
    state_key: { file: './secrets/state_key' },
    audit_signing_key: { file: './secrets/audit_signing_key.pem' },
    redis_conf: { file: './secrets/redis.conf' },
    redis_url: { file: './secrets/redis_url' },
    vault_keys: { file: './secrets/vault_keys' },
  };
  const volumes = { audit: {} };
  for (const s of servers) {
    const { deploy } = s;
    const extra = deploy.compose?.include;
    if (extra !== undefined) {
      const part = parse(readFileSync(join(s.dir, extra), 'utf8'));
      for (const [name, service] of Object.entries(part.services ?? {})) {
        if (services[name] !== undefined) throw new Error(`two Compose services named ${name}`);
        services[name] = {
          ...service,
          ...(service.volumes ? { volumes: service.volumes.map((v) => fromDocker(s, v)) } : {}),
        };
      }
      for (const [name, secret] of Object.entries(part.secrets ?? {}))
        secrets[name] = { file: `./secrets/${secret.file}` };
      Object.assign(volumes, part.volumes ?? {});
    }
    const credential = secretFile(s);
    secrets[credential] = { file: `./secrets/${credential}` };
    // User mode's secrets (ADR 0026), mounted always: GATEHOUSE_IDENTITY=user turns them on.
    const identity = deploy.identity === undefined ? undefined : identitySecretFile(s);
    if (identity !== undefined) secrets[identity] = { file: `./secrets/${identity}` };
    const settings = Object.fromEntries(
      Object.entries(deploy.settings ?? {}).map(([k, v]) => [k, `\${${k}:-${v}}`]),
    );
    services[`gatehouse-${s.id}`] = {
      read_only: true,
      user: '1000:1000',
      tmpfs: ['/tmp:size=64m,mode=1777'],
      cap_drop: ['ALL'],
      security_opt: ['no-new-privileges:true'],
      restart: 'unless-stopped',
      // Longer than the drain (GATEHOUSE_DRAIN_MS, 25 s), as in Kubernetes.
      stop_grace_period: `${GRACE_S}s`,
      ...(deploy.profile === undefined ? {} : { profiles: [deploy.profile] }),
      build: {
        context: '..',
        dockerfile: 'docker/Dockerfile',
        args: { SERVER: s.id, VERSION: s.version },
      },
      image: `gatehouse-${s.id}:${s.version}`,
      depends_on: {
        redis: { condition: 'service_started' },
        ...Object.fromEntries(
          Object.entries(deploy.compose?.dependsOn ?? {}).map(([k, v]) => [k, { condition: v }]),
        ),
      },
      environment: {
        GATEHOUSE_TRANSPORT: 'http',
        GATEHOUSE_HOST: '0.0.0.0',
        GATEHOUSE_PORT: '8080',
        GATEHOUSE_METRICS_PORT: '9464',
        GATEHOUSE_DRAIN_MS: String(DRAIN_MS),
        GATEHOUSE_ALLOWED_HOSTS: 'localhost,127.0.0.1',
        GATEHOUSE_AUTH: 'api_key',
        GATEHOUSE_API_KEYS_FILE: '/run/secrets/api_keys',
        GATEHOUSE_STATE_KEY_FILE: '/run/secrets/state_key',
        GATEHOUSE_AUDIT_SIGNING_KEY_FILE: '/run/secrets/audit_signing_key',
        GATEHOUSE_REDIS_URL_FILE: '/run/secrets/redis_url',
        GATEHOUSE_AUDIT_SINKS: 'stdout,file',
        GATEHOUSE_AUDIT_FILE: `/var/lib/gatehouse/audit/${s.id}.jsonl`,
        [`${deploy.upstream.variable}_FILE`]: `/run/secrets/${credential}`,
        ...(identity === undefined
          ? {}
          : {
              GATEHOUSE_IDENTITY: '${GATEHOUSE_IDENTITY:-service}',
              GATEHOUSE_VAULT_KEYS_FILE: '/run/secrets/vault_keys',
              [`${deploy.identity.variable}_FILE`]: `/run/secrets/${identity}`,
            }),
        ...settings,
      },
      secrets: [
        'api_keys',
        'state_key',
        'audit_signing_key',
        'redis_url',
        credential,
        ...(identity === undefined ? [] : ['vault_keys', identity]),
      ],
      volumes: ['audit:/var/lib/gatehouse/audit'],
      ports: [`127.0.0.1:${deploy.port}:8080`],
    };
  }
  const first = servers.find((s) => s.deploy.profile === undefined) ?? servers[0];
  const usage = [
    'Gatehouse with Docker Compose (or podman-compose): Redis for the shared rate limits, each',
    "server's own services (the postgres server's demo database), and the servers — hardened like",
    'the Kubernetes manifests (read-only root, non-root, no capabilities, no new privileges).',
    '',
    '  node docker/make-secrets.mjs    # once: random keys and passwords into docker/secrets/',
    `  docker compose -p gatehouse -f docker/compose.yaml up --build    # ${first.id} on :${first.deploy.port}`,
    '  docker compose -p gatehouse -f docker/compose.yaml --profile saas up   # + the SaaS servers',
    '',
    'Secrets are files mounted at /run/secrets/<name>; every server reads them through the *_FILE',
    'form of its variables, so no secret sits in the environment. See docs/deploy.md.',
  ];
  return `${HEADER('the Compose stack')}#\n${usage.map((l) => `# ${l}`.trimEnd()).join('\n')}\n${stringify({ services, secrets, volumes }, { lineWidth: 100 })}`;
}

function kustomization(s) {
  const { deploy } = s;
  const up = deploy.upstream;
  const egress =
    up.egress === 'https'
      ? {
          to: [{ ipBlock: { cidr: '0.0.0.0/0', except: PRIVATE } }],
          ports: [{ port: 443, protocol: 'TCP' }],
        }
      : {
          to: [{ ipBlock: { cidr: '0.0.0.0/0', except: ['169.254.0.0/16'] } }],
          ports: [{ port: up.egress.port, protocol: 'TCP' }],
        };
  const note =
    up.egress === 'https'
      ? 'The vendor API over HTTPS: public addresses only (no cluster, private or metadata addresses). Narrow it to the vendor with an FQDN-aware CNI (Cilium, Calico) if you have one.'
      : up.egress.note;
  const patch = (ops) => stringify(ops, { lineWidth: 100 }).trimEnd();
  const doc = {
    apiVersion: 'kustomize.config.k8s.io/v1beta1',
    kind: 'Kustomization',
    resources: ['../../server'],
    nameSuffix: `-${s.id}`,
    labels: [
      {
        pairs: {
          'app.kubernetes.io/name': `gatehouse-${s.id}`,
          'app.kubernetes.io/part-of': 'gatehouse',
        },
        includeSelectors: true,
      },
    ],
    images: [{ name: 'gatehouse-server', newName: `gatehouse-${s.id}`, newTag: s.version }],
    configMapGenerator: [
      {
        name: 'gatehouse-config',
        literals: [
          `GATEHOUSE_ALLOWED_HOSTS=${s.id}.${DOMAIN}`,
          `${up.variable}_FILE=/run/secrets/upstream/${up.key}`,
          ...Object.entries(deploy.settings ?? {}).map(([k, v]) => `${k}=${v}`),
        ],
      },
    ],
    patches: [
      {
        target: { kind: 'Deployment' },
        patch: patch([
          {
            op: 'replace',
            path: '/spec/template/spec/volumes/2/secret/secretName',
            value: `gatehouse-upstream-${s.id}`,
          },
        ]),
      },
      {
        target: { kind: 'NetworkPolicy' },
        patch: `# ${note}\n${patch([{ op: 'add', path: '/spec/egress/-', value: egress }])}`,
      },
    ],
  };
  return `${HEADER(`the ${s.id} server: the template, named, pointed at its image, configuration and upstream`)}${stringify(doc, { lineWidth: 100 })}`;
}

function base(servers) {
  const doc = {
    apiVersion: 'kustomize.config.k8s.io/v1beta1',
    kind: 'Kustomization',
    namespace: 'gatehouse',
    resources: ['namespace.yaml', 'redis.yaml', ...servers.map((s) => `../servers/${s.id}`)],
  };
  return `${HEADER('every server, Redis and the namespace')}${stringify(doc)}`;
}

function example(servers) {
  const kustomization = {
    apiVersion: 'kustomize.config.k8s.io/v1beta1',
    kind: 'Kustomization',
    namespace: 'gatehouse',
    resources: ['../../base', 'ingress.yaml'],
    // Fixed names: the operator creates or rotates these Secrets outside kustomize.
    generatorOptions: { disableNameSuffixHash: true },
    secretGenerator: [
      {
        name: 'gatehouse-shared',
        literals: [
          // [{"id","sha256","principal","scopes"}] — the SHA-256 of each key, never the key.
          'api-keys=[{"id":"replace-me","sha256":"0000000000000000000000000000000000000000000000000000000000000000","principal":"replace-me","scopes":["*"]}]',
          'state-key=REPLACE-ME-with-32-or-more-random-characters',
          'audit-signing-key=REPLACE-ME-with-the-PEM-from-gatehouse-audit-keygen',
          'redis-url=redis://:REPLACE-ME-redis-password@redis:6379',
        ],
      },
      // Redis's configuration: the same password (requirepass), protected mode, no persistence.
      { name: 'gatehouse-redis', files: ['redis.conf'] },
      // User mode's vault keys (ADR 0026): one "<id> <32 bytes base64>" a line, newest first.
      {
        name: 'gatehouse-vault',
        literals: ['vault-keys=k1 REPLACE-ME-with-32-random-bytes-in-base64'],
      },
      ...servers.map((s) => ({
        name: `gatehouse-upstream-${s.id}`,
        literals: [
          `${s.deploy.upstream.key}=${s.deploy.upstream.placeholder}`,
          // User mode: the vendor app's OAuth client secret, beside the service credential.
          ...(s.deploy.identity === undefined
            ? []
            : ['oauth-client-secret=REPLACE-ME-the-app-client-secret-for-user-mode']),
        ],
      })),
    ],
  };
  const backend = (s) => ({ service: { name: `gatehouse-${s.id}`, port: { name: 'http' } } });
  const ingress = {
    apiVersion: 'networking.k8s.io/v1',
    kind: 'Ingress',
    metadata: {
      name: 'gatehouse',
      annotations: {
        'cert-manager.io/cluster-issuer': 'letsencrypt',
        // Streamable HTTP: answers may stream (SSE); no buffering, long reads.
        'nginx.ingress.kubernetes.io/proxy-buffering': 'off',
        'nginx.ingress.kubernetes.io/proxy-read-timeout': '120',
        'nginx.ingress.kubernetes.io/proxy-body-size': '1m',
      },
    },
    spec: {
      ingressClassName: 'nginx',
      tls: [{ hosts: servers.map((s) => `${s.id}.${DOMAIN}`), secretName: 'gatehouse-tls' }],
      rules: servers.map((s) => ({
        host: `${s.id}.${DOMAIN}`,
        http: {
          paths: [
            { path: '/mcp', pathType: 'Exact', backend: backend(s) },
            // OAuth: clients discover the authorization server here (GATEHOUSE_AUTH=oauth).
            {
              path: '/.well-known/oauth-protected-resource',
              pathType: 'Prefix',
              backend: backend(s),
            },
            // Acting as each person (GATEHOUSE_IDENTITY=user, ADR 0026): the browser's linking
            // pages and the vendor's callback. A server in service mode answers them 404.
            ...(s.deploy.profile === 'saas'
              ? [{ path: '/connect/', pathType: 'Prefix', backend: backend(s) }]
              : []),
          ],
        },
      })),
    },
  };
  return {
    'redis.conf': `${HEADER("Redis's configuration, a Secret (gatehouse-redis): the password is the one in redis-url")}${redisConf('REPLACE-ME-redis-password')}`,
    'kustomization.yaml': `${HEADER('a complete example: the base, the Secrets it references (PLACEHOLDER values: create the real ones with your secret manager, docs/deploy.md) and an Ingress with TLS')}${stringify(kustomization, { lineWidth: 0 })}`,
    'ingress.yaml': `${HEADER('one host per server, TLS at the ingress (cert-manager); the metrics port is not routed')}${stringify(ingress, { lineWidth: 100 })}`,
  };
}

/** Every generated file: path (relative to the repository) → text. */
export function renderedFiles(servers = declarations()) {
  const files = {
    'docker/compose.yaml': compose(servers),
    'docker/k8s/base/kustomization.yaml': base(servers),
    ...Object.fromEntries(
      Object.entries(example(servers)).map(([f, t]) => [`docker/k8s/overlays/example/${f}`, t]),
    ),
  };
  for (const s of servers)
    files[`docker/k8s/servers/${s.id}/kustomization.yaml`] = kustomization(s);
  return files;
}

/** The generated files that differ from the committed ones (or are missing, or left over). */
export function drift(servers = declarations()) {
  const files = renderedFiles(servers);
  const stale = Object.entries(files)
    .filter(([path, text]) => {
      const file = join(ROOT, path);
      return !existsSync(file) || readFileSync(file, 'utf8') !== text;
    })
    .map(([path]) => path);
  const rendered = join(DOCKER, 'k8s/servers');
  const ids = new Set(servers.map((s) => s.id));
  const leftover = (existsSync(rendered) ? readdirSync(rendered) : [])
    .filter((old) => !ids.has(old))
    .map((old) => `docker/k8s/servers/${old}/`);
  return [...stale, ...leftover];
}

/** Writes every generated file; returns their paths, relative to the repository. */
export function render(servers = declarations()) {
  const files = renderedFiles(servers);
  // A server whose folder is gone leaves no kustomization behind (the rest are rewritten).
  const ids = new Set(servers.map((s) => s.id));
  const rendered = join(DOCKER, 'k8s/servers');
  for (const old of existsSync(rendered) ? readdirSync(rendered) : [])
    if (!ids.has(old)) rmSync(join(rendered, old), { recursive: true, force: true });
  for (const [path, text] of Object.entries(files)) {
    mkdirSync(dirname(join(ROOT, path)), { recursive: true });
    writeFileSync(join(ROOT, path), text);
  }
  return Object.keys(files);
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  try {
    const written = render();
    process.stdout.write(`render: wrote ${written.length} files (${written.join(', ')})\n`);
  } catch (error) {
    process.stderr.write(`render: ${error.message}\n`);
    process.exit(2);
  }
}
