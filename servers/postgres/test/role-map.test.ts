import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Principal } from '@gatehouse/core';
import { afterAll, describe, expect, it } from 'vitest';
import { loadRoleMap } from '../src/role-map.ts';

// The role map as the operator writes it (ADR 0027): what it refuses at start, and which role each
// caller gets. What PostgreSQL does with the role is tested in roles.test.ts.

const dir = mkdtempSync(join(tmpdir(), 'gatehouse-role-map-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

function file(name: string, text: string): string {
  const path = join(dir, name);
  writeFileSync(path, text);
  return path;
}

const caller = (id: string, extra: Partial<Principal> = {}): Principal => ({
  id,
  authMethod: 'oauth',
  scopes: [],
  ...extra,
});

describe('reading the role map', () => {
  it.each([
    ['missing.yaml', null, /POSTGRES_ROLE_MAP_FILE: \S+missing\.yaml: cannot be read \(ENOENT\)/],
    ['bad.yaml', 'rules: [', /not valid YAML/],
    ['empty.yaml', '', /no rules and no default: every caller would be refused/],
    [
      'both.yaml',
      'rules:\n  - { principal: a, claim: { name: g, value: x }, role: r }\n',
      /rules\.0: give exactly one of principal or claim/,
    ],
    ['unknown.yaml', 'rules: []\ndefault: r\nroles: [x]\n', /Unrecognized key.*roles/],
    ['claim.yaml', 'default: r\nclaims: [Region]\n', /claims\.0: lower-case letters/],
  ])('%s: refused at start, naming the file and the problem', (name, text, problem) => {
    const path = text === null ? join(dir, name) : file(name, text);
    expect(() => loadRoleMap({ POSTGRES_ROLE_MAP_FILE: path })).toThrow(problem);
  });

  it('takes one of POSTGRES_ROLE and POSTGRES_ROLE_MAP_FILE, not both', () => {
    expect(() =>
      loadRoleMap({ POSTGRES_ROLE: 'r', POSTGRES_ROLE_MAP_FILE: file('x.yaml', 'default: r') }),
    ).toThrow(/set either POSTGRES_ROLE .* or POSTGRES_ROLE_MAP_FILE/);
    expect(loadRoleMap({})).toBeUndefined();
    expect(loadRoleMap({ POSTGRES_ROLE: 'reader' })!.identity(caller('anyone'))).toEqual({
      role: 'reader',
      principal: 'anyone',
      claims: [],
    });
  });
});

describe('which role a caller gets', () => {
  const map = loadRoleMap({
    POSTGRES_ROLE_MAP_FILE: file(
      'map.yaml',
      [
        'rules:',
        '  - { principal: ana@example.com, role: analyst }',
        '  - { claim: { name: groups, value: sales }, role: sales_rep }',
        '  - { claim: { name: tenant, value: acme }, role: acme_reader }',
        'claims: [tenant, region]',
      ].join('\n'),
    ),
  })!;

  it('by id, by a string claim, by one entry of a list claim; the first rule that matches', () => {
    expect(map.identity(caller('ana@example.com', { claims: { tenant: 'acme' } }))).toEqual({
      role: 'analyst',
      principal: 'ana@example.com',
      claims: ['acme', ''],
    });
    expect(
      map.identity(
        caller('rex', { claims: { region: 'nordics' }, claimLists: { groups: ['eng', 'sales'] } }),
      ),
    ).toEqual({ role: 'sales_rep', principal: 'rex', claims: ['', 'nordics'] });
    expect(map.identity(caller('carl', { claims: { tenant: 'acme' } })).role).toBe('acme_reader');
    expect(map.roles).toEqual(['analyst', 'sales_rep', 'acme_reader']);
  });

  it('refuses a caller no rule names (no default): never a role by a near match', () => {
    for (const who of [
      caller('ANA@example.com'),
      caller('rex', { claims: { groups: 'sales eng' } }),
      caller('rex', { claims: { group: 'sales' }, claimLists: { tenants: ['acme'] } }),
    ]) {
      expect(() => map.identity(who), who.id).toThrow(
        `No database role is mapped to you (principal "${who.id}")`,
      );
    }
  });
});
