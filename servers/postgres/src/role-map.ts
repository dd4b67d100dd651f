import { createHash } from 'node:crypto';
import { ConfigError, PolicyError } from '@gatehouse/core';
import type { Principal } from '@gatehouse/core';
import * as z from 'zod';
import { readYamlFile } from './yaml-file.js';

/**
 * The role map (ADR 0027): which PostgreSQL role each verified caller's calls run as. Inside the
 * read-only transaction each call switches to that role (`set_config('role', …, true)`, which is
 * `SET LOCAL ROLE`) and sets `gatehouse.principal` and the listed claims
 * (`gatehouse.claim.<name>`) for row-level security policies to read — in the same round trip as
 * the call's other settings. A caller no rule maps, with no default, is refused.
 */

/** A PostgreSQL role name as stored (no quoting: `set_config` takes it as written). */
const ROLE_NAME = z
  .string()
  .min(1)
  .max(63)
  .regex(/^[^\p{C}]+$/u, 'a role name of printable characters')
  .describe('A PostgreSQL role, exactly as the catalog stores it (usually lower case).');

/** A claim name as a custom setting can carry it: `gatehouse.claim.<name>`. */
const SETTING_CLAIM = z
  .string()
  .regex(/^[a-z_][a-z0-9_]{0,62}$/, 'lower-case letters, digits and _, as in region or tenant_id');

const RuleSchema = z
  .strictObject({
    principal: z
      .string()
      .min(1)
      .max(256)
      .optional()
      .describe("The principal's id exactly: an API key's principal, a token's sub."),
    claim: z
      .strictObject({
        name: z.string().regex(/^[A-Za-z_][\w.:-]{0,63}$/, 'a claim name'),
        value: z.string().max(1024),
      })
      .optional()
      .describe(
        "A claim of the caller's credential equal to a value: a token's string claim, or one element of a list claim (groups, roles); an API key's configured claims.",
      ),
    role: ROLE_NAME,
  })
  .superRefine((rule, ctx) => {
    if ((rule.principal === undefined) === (rule.claim === undefined)) {
      ctx.addIssue({ code: 'custom', message: 'give exactly one of principal or claim' });
    }
  });

/** The file: rules in order (the first that matches decides), an optional default, claims. */
export const RoleMapFileSchema = z.strictObject({
  rules: z
    .array(RuleSchema)
    .max(1000)
    .default([])
    .describe('Tried in order; the first rule that matches the caller gives the role.'),
  default: ROLE_NAME.optional().describe(
    'The role of a caller no rule matches. Without it, such a caller is refused.',
  ),
  claims: z
    .array(SETTING_CLAIM)
    .max(16)
    .default([])
    .describe(
      "Claims set for each call as gatehouse.claim.<name> (empty when the caller's credential has none), beside gatehouse.principal.",
    ),
});
export type RoleMapFile = z.output<typeof RoleMapFileSchema>;

/** Who a call runs as in the database, and the settings policies read. */
export interface DbIdentity {
  /** The role to switch to; undefined: the login role (no role map, or the server's own calls). */
  readonly role: string | undefined;
  /** `gatehouse.principal`: the caller's id ('' for the server's own calls). */
  readonly principal: string;
  /** `gatehouse.claim.<name>` of each listed claim, in the map's order ('' when absent). */
  readonly claims: readonly string[];
}

/** The server's own calls (readiness, start checks): the login role, nobody's settings. */
export const SERVER_IDENTITY: DbIdentity = Object.freeze({
  role: undefined,
  principal: '',
  claims: Object.freeze([]),
});

/** The map as loaded: where it came from, and its rules. */
export class RoleMap {
  readonly file: RoleMapFile;
  /** The variable that set it: the one a refusal names. */
  readonly variable: 'POSTGRES_ROLE_MAP_FILE' | 'POSTGRES_ROLE';
  /** SHA-256 of the file's bytes (for the start record), or of POSTGRES_ROLE's value. */
  readonly sha256: string;

  constructor(
    file: RoleMapFile,
    variable: 'POSTGRES_ROLE_MAP_FILE' | 'POSTGRES_ROLE',
    sha256: string,
  ) {
    this.file = file;
    this.variable = variable;
    this.sha256 = sha256;
  }

  /** Every role the map can give, each once, in the order the map names them. */
  get roles(): string[] {
    return [
      ...new Set([
        ...this.file.rules.map((r) => r.role),
        ...(this.file.default === undefined ? [] : [this.file.default]),
      ]),
    ];
  }

  /** The claims set as `gatehouse.claim.<name>`. */
  get claims(): readonly string[] {
    return this.file.claims;
  }

  /**
   * The role of `principal` and its settings. Refuses (rule `role_map`) a caller no rule maps
   * when there is no default: never the login role instead.
   */
  identity(principal: Principal): DbIdentity {
    const rule = this.file.rules.find((r) => matches(r, principal));
    const role = rule?.role ?? this.file.default;
    if (role === undefined) {
      throw new PolicyError(
        'role_map',
        `No database role is mapped to you (principal "${principal.id}"): ask the operator to add you to the role map (${this.variable}).`,
        { code: 'no_database_role' },
      );
    }
    return {
      role,
      principal: principal.id,
      claims: this.file.claims.map((name) => principal.claims?.[name] ?? ''),
    };
  }
}

function matches(rule: RoleMapFile['rules'][number], principal: Principal): boolean {
  if (rule.principal !== undefined) return rule.principal === principal.id;
  const { name, value } = rule.claim!;
  if (principal.claims?.[name] === value) return true;
  return principal.claimLists?.[name]?.includes(value) === true;
}

/**
 * The role map of the configuration: POSTGRES_ROLE_MAP_FILE (YAML or JSON, the schema above),
 * or POSTGRES_ROLE (every caller one role: the local user's over stdio), or none. Throws a
 * ConfigError naming every problem.
 */
export function loadRoleMap(config: {
  POSTGRES_ROLE_MAP_FILE?: string | undefined;
  POSTGRES_ROLE?: string | undefined;
}): RoleMap | undefined {
  const { POSTGRES_ROLE_MAP_FILE: file, POSTGRES_ROLE: role } = config;
  if (file !== undefined && role !== undefined) {
    throw new ConfigError([
      'POSTGRES_ROLE: set either POSTGRES_ROLE (one role for every caller) or POSTGRES_ROLE_MAP_FILE (a role per caller), not both',
    ]);
  }
  if (role !== undefined) {
    const parsed = ROLE_NAME.safeParse(role);
    if (!parsed.success) {
      throw new ConfigError([`POSTGRES_ROLE: ${parsed.error.issues[0]!.message}`]);
    }
    return new RoleMap(
      { rules: [], default: parsed.data, claims: [] },
      'POSTGRES_ROLE',
      createHash('sha256').update(role).digest('hex'),
    );
  }
  if (file === undefined) return undefined;
  const problem = (text: string) => `POSTGRES_ROLE_MAP_FILE: ${file}: ${text}`;
  const { bytes, doc } = readYamlFile(file, problem);
  const parsed = RoleMapFileSchema.safeParse(doc ?? {});
  if (!parsed.success) {
    throw new ConfigError(
      parsed.error.issues.map((i) =>
        problem(`${i.path.map(String).join('.') || '(the file)'}: ${i.message}`),
      ),
    );
  }
  if (parsed.data.rules.length === 0 && parsed.data.default === undefined) {
    throw new ConfigError([problem('no rules and no default: every caller would be refused')]);
  }
  return new RoleMap(
    parsed.data,
    'POSTGRES_ROLE_MAP_FILE',
    createHash('sha256').update(bytes).digest('hex'),
  );
}
