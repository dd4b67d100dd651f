// The CycloneDX SBOM of one image (docker/Dockerfile, rootfs stage): the npm packages of /app as
// @cyclonedx/cyclonedx-npm found them (the prune stage), plus what the image holds besides —
// the node binary and the Debian packages of the shared libraries it loads (ldd, dpkg) — with
// the image itself as the main component. Written to /usr/share/gatehouse/sbom.cdx.json.
//   node sbom.mjs <npm SBOM> <server> <version>   (prints the SBOM)
import { execFileSync } from 'node:child_process';
import { readFileSync, realpathSync } from 'node:fs';

const [npmSbom, server, version] = process.argv.slice(2);
if (!npmSbom || !server || !version)
  throw new Error('usage: node sbom.mjs <npm SBOM> <server> <version>');
const bom = JSON.parse(readFileSync(npmSbom, 'utf8'));
const run = (command, args) => execFileSync(command, args, { encoding: 'utf8' }).trim();

/** The Debian package owning a file (dpkg knows it by one of its paths). */
function owner(path) {
  for (const candidate of [path, realpathSync(path)]) {
    try {
      return run('dpkg', ['-S', candidate]).split(':')[0];
    } catch {
      // not this spelling
    }
  }
  throw new Error(`no Debian package owns ${path}`);
}

const distro = `debian-${run('cat', ['/etc/debian_version']).split('.')[0]}`;
const arch = run('dpkg', ['--print-architecture']);
const libraries = run('ldd', [process.execPath])
  .split('\n')
  .map((line) => /(\/\S+)/.exec(line)?.[1])
  .filter((path) => path !== undefined);
const packages = [...new Set(libraries.map(owner))].sort();
const os = packages.map((name) => {
  const pkgVersion = run('dpkg-query', ['-W', '-f=${Version}', `${name}:${arch}`]);
  return {
    type: 'library',
    'bom-ref': `pkg:deb/debian/${name}@${pkgVersion}?arch=${arch}`,
    name,
    version: pkgVersion,
    purl: `pkg:deb/debian/${name}@${encodeURIComponent(pkgVersion)}?arch=${arch}&distro=${distro}`,
    description: 'Debian package of a shared library node loads',
  };
});
const node = {
  type: 'application',
  'bom-ref': `pkg:generic/node@${process.versions.node}`,
  name: 'node',
  version: process.versions.node,
  purl: `pkg:generic/node@${process.versions.node}`,
  description: 'The Node.js runtime (/usr/local/bin/node)',
};
const app = bom.metadata?.component;
bom.metadata = {
  ...bom.metadata,
  component: {
    type: 'container',
    'bom-ref': `gatehouse-${server}@${version}`,
    name: `gatehouse-${server}`,
    version,
    description: `Gatehouse MCP server image: ${server}`,
  },
};
bom.components = [
  ...(app ? [{ ...app, name: `gatehouse-${server}-app`, version }] : []),
  node,
  ...os,
  ...(bom.components ?? []),
];
process.stdout.write(`${JSON.stringify(bom, null, 2)}\n`);
