/**
 * The Node.js version check every Gatehouse bin imports first. It must parse and run on old
 * Node versions: no imports, nothing newer than ES2020 — the bin loads the rest (the SDK, zod,
 * `node:module`'s compile cache) only after it, with dynamic imports, so an old Node gets this
 * sentence instead of a SyntaxError from deep inside a dependency.
 */

/** The oldest supported Node.js (the `engines` of every package; a test keeps them equal). */
export const MIN_NODE = '22.19.0';

/** Whether `version` (`22.19.0`, `v24.1.0`) is at least {@link MIN_NODE}. */
export function supportedNode(version: string): boolean {
  const [major = 0, minor = 0, patch = 0] = version.replace(/^v/, '').split('.').map(Number);
  const [minMajor = 0, minMinor = 0, minPatch = 0] = MIN_NODE.split('.').map(Number);
  if (major !== minMajor) return major > minMajor;
  if (minor !== minMinor) return minor > minMinor;
  return patch >= minPatch;
}

if (!supportedNode(process.versions.node)) {
  const bin = (process.argv[1] ?? 'gatehouse').split(/[\\/]/).pop();
  process.stderr.write(
    `${bin === 'index.js' || bin === 'bin.js' ? 'Gatehouse' : bin} needs Node.js ${MIN_NODE} or later (Node 24 LTS is recommended); this is Node.js ${process.versions.node}. Install a newer Node.js and run it again.\n`,
  );
  process.exit(1);
}
