#!/usr/bin/env node
// The machine tools the test suite drives, installed when missing so `npm test` passes on a
// fresh machine: Chromium (the audit report's browser test), redis-server (the replica tests),
// buildah and podman (the image tests build and inspect the images), skopeo and GnuPG (they sign
// and verify them), rsyslog (the audit witness receives checkpoints), Python's cryptography (the
// second audit verifier). Debian packages, installed
// with apt-get when this runs as root; otherwise the command to run is printed and the test
// command stops here. kubectl (the Kustomize render tests) comes with the machine image.
import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';

const needed = [
  { command: 'chromium', pkg: 'chromium', for: "the audit report's browser test" },
  { command: 'redis-server', pkg: 'redis-server', for: 'the shared rate-limit tests' },
  { command: 'buildah', pkg: 'buildah', for: 'building the container images' },
  { command: 'podman', pkg: 'podman', for: 'inspecting the container images' },
  { command: 'unshare', pkg: 'util-linux', for: 'running the images as PID 1' },
  { command: 'skopeo', pkg: 'skopeo', for: 'signing and verifying the images' },
  { command: 'gpg', pkg: 'gnupg', for: 'the key the images are signed with' },
  {
    command: 'rsyslogd',
    pkg: 'rsyslog',
    for: 'the audit witness tests (a real syslog receiver)',
    // In /usr/sbin, which a non-login PATH may lack.
    check: () => existsSync('/usr/sbin/rsyslogd') || has('rsyslogd'),
  },
  {
    command: 'python3',
    pkg: 'python3-cryptography',
    for: 'the second audit verifier (packages/audit/python/verify.py)',
    check: () => spawnSync('python3', ['-c', 'import cryptography']).status === 0,
  },
];
const has = (command) => spawnSync('sh', ['-c', `command -v ${command}`]).status === 0;
const missing = needed.filter((t) => (t.check === undefined ? !has(t.command) : !t.check()));
if (!has('kubectl')) {
  process.stderr.write(
    'ensure-tools: kubectl is missing (the Kustomize render tests need kubectl ≥ 1.27: https://kubernetes.io/docs/tasks/tools/)\n',
  );
  process.exit(1);
}
if (missing.length === 0) process.exit(0);
const packages = [...new Set(missing.map((t) => t.pkg))];
const list = missing.map((t) => `${t.command} (${t.for})`).join(', ');
if (process.getuid?.() !== 0 || !has('apt-get')) {
  process.stderr.write(
    `ensure-tools: missing ${list}.\nInstall them, then run the tests again:\n  sudo apt-get install -y ${packages.join(' ')}\n`,
  );
  process.exit(1);
}
process.stderr.write(`ensure-tools: installing ${packages.join(' ')} (for ${list})…\n`);
const env = { ...process.env, DEBIAN_FRONTEND: 'noninteractive' };
execFileSync('apt-get', ['update', '-qq'], { stdio: ['ignore', 'ignore', 'inherit'], env });
execFileSync('apt-get', ['install', '-y', '-qq', ...packages], {
  stdio: ['ignore', 'ignore', 'inherit'],
  env,
});
