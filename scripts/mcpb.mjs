#!/usr/bin/env node
// `npm run bundle [-- <server>…] [--out DIR]`: an MCP Bundle (.mcpb) per server for Claude Desktop
// — the format of @anthropic-ai/mcpb — made from what each server declares, so a new server gets
// one without an edit here. Each bundle holds the server's built bin and its bundled code, the
// few packages the bundle loads from disk (the Node version check, and the server's external
// modules such as PostgreSQL's SQL parser), and a manifest: the entry point, the tools and
// prompts, Node >= 22.19 on macOS, Windows and Linux, and a `user_config` of the variables its
// example configuration names — secrets marked sensitive, so Claude Desktop keeps them in the
// OS keychain instead of a file — plus a switch for the write tools where it has any. Validated
// with the official CLI (`mcpb validate`) and packed with it (`mcpb pack`).
// Output: dist/bundles/gatehouse-<id>-<version>.mcpb and, for a private MCP registry,
// dist/bundles/registry/<id>/server.json (docker/registry.mjs; --bundle-url, --image-prefix and
// --remote-url say where the bundles, images and a deployment are). Git-ignored. Needs a build.
import { execFileSync } from 'node:child_process';
import {
  cpSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  readdirSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { parseArgs } from 'node:util';
import { MIN_NODE, ROOT, serverSettings } from './server-settings.mjs';

const MCPB = join(ROOT, 'node_modules/.bin/mcpb');
const read = (path) => JSON.parse(readFileSync(path, 'utf8'));

/** The package folder of `name` as resolved from `from`, and its manifest. */
function packageOf(name, from) {
  const require = createRequire(join(from, 'package.json'));
  let dir = dirname(require.resolve(name));
  while (!existsSync(join(dir, 'package.json')) || read(join(dir, 'package.json')).name !== name)
    dir = dirname(dir);
  return { dir, manifest: read(join(dir, 'package.json')) };
}

/** Copies `name` and the packages it depends on (recursively) into `modules`. */
function copyPackage(name, from, modules, done = new Set()) {
  if (done.has(name)) return;
  done.add(name);
  const { dir, manifest } = packageOf(name, from);
  cpSync(dir, join(modules, name), {
    recursive: true,
    dereference: true,
    filter: (src) => !src.includes(`${dir}/node_modules`),
  });
  for (const dep of Object.keys(manifest.dependencies ?? {})) copyPackage(dep, dir, modules, done);
}

/**
 * The one module of `name` the bin imports before anything else (the Node version check), with a
 * package.json that exports only it: not the package and its dependencies, which the bundle holds.
 */
function copyNodeCheck(name, from, modules) {
  const { dir, manifest } = packageOf(name, from);
  const target = join(modules, name);
  mkdirSync(join(target, 'dist'), { recursive: true });
  cpSync(join(dir, 'dist/node-check.js'), join(target, 'dist/node-check.js'));
  writeFileSync(
    join(target, 'package.json'),
    `${JSON.stringify({ name, version: manifest.version, type: 'module', exports: { './node-check': './dist/node-check.js' } }, null, 2)}\n`,
  );
}

/** The modules the server's bundle leaves outside (scripts/bundle.mjs), as imported by it. */
function externals(bundleDir) {
  const found = new Set();
  for (const file of readdirSync(bundleDir).filter((f) => f.endsWith('.js'))) {
    const text = readFileSync(join(bundleDir, file), 'utf8');
    for (const m of text.matchAll(
      /\bfrom\s*["'](libpg-query|pg-native)["']|\bimport\(\s*["'](libpg-query|pg-native)["']\s*\)/g,
    ))
      found.add(m[1] ?? m[2]);
  }
  return [...found];
}

/** user_config key of a variable: `GITHUB_TOKEN` → `github_token`. */
const key = (variable) => variable.toLowerCase();

/** The manifest of server `id`: what Claude Desktop shows, asks for and runs. */
export async function bundleManifest(id) {
  const { pkg, definition, title, variables, writes } = await serverSettings(id);
  const userConfig = {};
  const env = {};
  for (const v of variables) {
    userConfig[key(v.name)] = {
      type: 'string',
      title: v.name,
      description: v.description,
      required: v.required,
      ...(v.secret ? { sensitive: true } : {}),
    };
    env[v.name] = `\${user_config.${key(v.name)}}`;
  }
  if (writes) {
    userConfig.enable_writes = {
      type: 'boolean',
      title: 'Allow the write tools',
      description:
        'Off: the server only reads. On: the write tools are listed too (each write is audited, and refused outside the allow-lists).',
      required: false,
      default: false,
    };
    env.GATEHOUSE_ENABLE_WRITES = '${user_config.enable_writes}';
  }
  return {
    manifest_version: '0.3',
    name: `gatehouse-${id}`,
    display_name: title,
    version: pkg.version,
    description: pkg.description,
    long_description: definition.instructions,
    author: { name: 'Gatehouse' },
    license: pkg.license,
    keywords: ['mcp', 'gatehouse', id],
    server: {
      type: 'node',
      entry_point: 'server/index.js',
      mcp_config: { command: 'node', args: ['${__dirname}/server/index.js'], env },
    },
    tools: definition.tools.map((t) => ({ name: t.name, description: t.description })),
    tools_generated: false,
    prompts: (definition.prompts ?? []).map((p) => ({
      name: p.name,
      description: p.description,
      arguments: Object.keys(p.arguments ?? {}),
      text: p.description,
    })),
    // The prompts are the server's own: it builds their messages (with the vendor's data) itself.
    prompts_generated: true,
    compatibility: {
      platforms: ['darwin', 'win32', 'linux'],
      runtimes: { node: `>=${MIN_NODE}` },
    },
    user_config: userConfig,
  };
}

/** Lays out, validates and packs the bundle of `id` into `out`; returns the .mcpb's path. */
export async function buildBundle(id, out) {
  const dir = join(ROOT, 'servers', id);
  const pkg = read(join(dir, 'package.json'));
  const bin = join(dir, Object.values(pkg.bin)[0]);
  if (!existsSync(bin)) throw new Error(`${bin} is not built: run npm run build first`);
  const stage = mkdtempSync(join(tmpdir(), `mcpb-${id}-`));
  try {
    mkdirSync(join(stage, 'server'));
    cpSync(bin, join(stage, 'server/index.js'));
    cpSync(join(dirname(bin), 'bundle'), join(stage, 'server/bundle'), { recursive: true });
    const modules = join(stage, 'node_modules');
    copyNodeCheck('@gatehouse/core', dir, modules);
    copyNodeCheck('@gatehouse/audit', packageOf('@gatehouse/core', dir).dir, modules);
    for (const name of externals(join(stage, 'server/bundle'))) copyPackage(name, dir, modules);
    const manifest = await bundleManifest(id);
    writeFileSync(join(stage, 'manifest.json'), `${JSON.stringify(manifest, null, 2)}\n`);
    execFileSync(MCPB, ['validate', join(stage, 'manifest.json')], { stdio: 'pipe' });
    mkdirSync(out, { recursive: true });
    const file = join(out, `gatehouse-${id}-${pkg.version}.mcpb`);
    rmSync(file, { force: true });
    execFileSync(MCPB, ['pack', stage, file], { stdio: 'pipe' });
    return file;
  } finally {
    rmSync(stage, { recursive: true, force: true });
  }
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const { values, positionals } = parseArgs({
    allowPositionals: true,
    options: {
      out: { type: 'string', default: join(ROOT, 'dist/bundles') },
      // Where the server.json files (docker/registry.mjs) say the bundles and images are.
      'bundle-url': { type: 'string' },
      'image-prefix': { type: 'string', default: 'localhost/' },
      'remote-url': { type: 'string' },
    },
  });
  const { writeServerJson } = await import('../docker/registry.mjs');
  const bundleUrl = values['bundle-url'] ?? pathToFileURL(`${values.out}/`).href;
  const ids =
    positionals.length > 0
      ? positionals
      : readdirSync(join(ROOT, 'servers'))
          .filter((d) => existsSync(join(ROOT, 'servers', d, 'package.json')))
          .sort();
  try {
    for (const id of ids) {
      const file = await buildBundle(id, values.out);
      const entry = await writeServerJson(
        id,
        {
          bundle: file,
          bundleUrl: bundleUrl.endsWith('/') ? bundleUrl : `${bundleUrl}/`,
          imagePrefix: values['image-prefix'],
          ...(values['remote-url'] ? { remoteUrl: values['remote-url'] } : {}),
        },
        join(values.out, 'registry'),
      );
      process.stdout.write(`bundle: ${file}\nserver.json: ${entry}\n`);
    }
  } catch (error) {
    process.stderr.write(`bundle: ${error.stderr?.toString() || error.message}\n`);
    process.exit(1);
  }
}
