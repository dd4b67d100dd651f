import { generateKeyPairSync } from 'node:crypto';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { once } from 'node:events';
import { parseArgs } from 'node:util';
import type { Writable } from 'node:stream';
import { keyIdOf } from './chain.js';
import { csvHeader, csvLine, flatten, toOcsf } from './export.js';
import { matcher, parseTime } from './filter.js';
import type { RecordFilter } from './filter.js';
import { forTerminal, jsonForTerminal } from './neutral.js';
import { readLines } from './read.js';
import { CALLS, ReportBuilder } from './report.js';
import { loadPublicKeys, verifyLines } from './verify.js';
import { readWitness } from './witness-check.js';
import type { VerifyReport } from './verify.js';

const USAGE = `gatehouse-audit — read, check and review Gatehouse audit logs

  gatehouse-audit verify [--key PUBLIC.pem]... [--witness FILE]... [--allow-open-tail] [--json] FILE...|-
  gatehouse-audit query  [filters] [--format table|json] [--limit N] FILE...|-
  gatehouse-audit export --format jsonl|csv|ocsf [filters] FILE...|-
  gatehouse-audit report --out REPORT.html [--key PUBLIC.pem]... [--witness FILE]... [--allow-open-tail] [--title T] [filters] FILE...|-
  gatehouse-audit keygen --out DIR

Filters: --from T --to T (ISO 8601, or 30m/24h/7d ago), --principal ID, --tool NAME,
         --server NAME, --outcome success|failure|<reason>, --target PATTERN (* wildcard),
         --action METHOD, --all (include lifecycle and checkpoint records)
--witness: the checkpoints a syslog server or OpenTelemetry collector received (its files, as
written); the log must hold every position they name with the same hash.
Files are read as streams in chain order (rotated files may be given in any order).
verify and report exit 0 when intact, 1 when damaged, 2 on a usage or read error.
report always shows lifecycle and security events (start, stop, crash, refused starts,
security overrides); a damaged log is reported whole, with the damage marked where it is.`;

const options = {
  key: { type: 'string', multiple: true },
  witness: { type: 'string', multiple: true },
  'allow-open-tail': { type: 'boolean' },
  json: { type: 'boolean' },
  format: { type: 'string' },
  limit: { type: 'string' },
  out: { type: 'string' },
  title: { type: 'string' },
  from: { type: 'string' },
  to: { type: 'string' },
  principal: { type: 'string' },
  tool: { type: 'string' },
  server: { type: 'string' },
  outcome: { type: 'string' },
  target: { type: 'string' },
  action: { type: 'string' },
  all: { type: 'boolean' },
  help: { type: 'boolean', short: 'h' },
} as const;

class UsageError extends Error {}

async function write(out: Writable, text: string): Promise<void> {
  if (!out.write(text)) await once(out, 'drain');
}

/** ` with key ed25519:…` (and how many each, when more than one key verified). */
function verifiedWith(report: VerifyReport): string {
  const keys = Object.entries(report.checkpoints.verifiedBy);
  if (keys.length === 0) return '';
  return ` with key ${keys.map(([id, n]) => (keys.length > 1 ? `${id} (${n})` : id)).join(', ')}`;
}

/** The verdict in lines, each neutralised for the terminal (a log chooses some of the values). */
function describe(report: VerifyReport): string {
  return verdict(report).map(forTerminal).join('\n');
}

function verdict(report: VerifyReport): string[] {
  if (!report.intact) {
    const d = report.damage!;
    return [
      `DAMAGED (${d.kind}) at ${d.file}:${d.line}${d.seq === undefined ? '' : ` seq ${d.seq}`}: ${d.message}`,
      `${report.records} record(s) verified before it.`,
    ];
  }
  const signed = report.checkpoints.signed;
  const unverified = signed - report.checkpoints.verified;
  return [
    `intact: ${report.records} records in ${report.chains} chain(s), seq ${report.first?.seq ?? '-'}..${report.last?.seq ?? '-'}, ${report.first?.time ?? ''} .. ${report.last?.time ?? ''}`,
    `checkpoints: ${report.checkpoints.total} (${signed} signed, ${report.checkpoints.verified} signature(s) verified${verifiedWith(report)})`,
    ...(unverified > 0
      ? [`warning: ${unverified} signature(s) not checked; pass --key with the trusted public key`]
      : []),
    ...(report.checkpoints.total === 0 || signed === 0
      ? ['warning: no signed checkpoints; the chain proves order and completeness, not authorship']
      : []),
    ...(report.lastSigned !== undefined && report.lastSigned.unsignedAfter > 0
      ? [
          `warning: the last signed checkpoint covers seq ${report.lastSigned.seq}; the ${report.lastSigned.unsignedAfter} record(s) after it are covered by no signature`,
        ]
      : []),
    ...(report.openTail > 0
      ? [`open tail: ${report.openTail} record(s) after the last checkpoint`]
      : []),
    ...(report.startsAtSeq === undefined
      ? []
      : [`note: the input starts mid-chain at seq ${report.startsAtSeq}`]),
    ...(report.foreignLines > 0 ? [`note: ${report.foreignLines} non-audit line(s) skipped`] : []),
    ...(report.declared.tornLines + report.declared.lostRecords > 0
      ? [
          `warning: the writer declared damage it could not avoid: ${report.declared.tornLines} line(s) torn (a process killed mid-write, a failed write) and ${report.declared.lostRecords} record(s) never written whole (a full disk, a size limit); the chain is intact around them, what they held is lost`,
        ]
      : []),
    ...witnessLines(report),
  ];
}

/** What the witness's copy showed: matched checkpoints, and what it could not vouch for. */
function witnessLines(report: VerifyReport): string[] {
  const w = report.witness;
  if (w === undefined) return [];
  return [
    `witness: ${w.matched} of ${w.checkpoints} witnessed checkpoint(s) of these streams match the log${w.before > 0 ? ` (${w.before} before the files given)` : ''}${w.otherStreams > 0 ? `; ${w.otherStreams} of other streams` : ''}`,
    ...(w.checkpoints === 0
      ? [
          'warning: the witness holds no checkpoint of these streams: nothing left the host to compare with',
        ]
      : []),
    ...(w.forged.length > 0
      ? [
          `warning: ${w.forged.length} witness entr${w.forged.length === 1 ? 'y is' : 'ies are'} not a genuine checkpoint (${w.forged.slice(0, 3).join(', ')}${w.forged.length > 3 ? ', …' : ''})`,
        ]
      : []),
  ];
}

function filterFrom(values: Record<string, unknown>): RecordFilter {
  const f: RecordFilter = {};
  if (typeof values.from === 'string') f.from = parseTime(values.from);
  if (typeof values.to === 'string') f.to = parseTime(values.to);
  for (const k of ['principal', 'tool', 'server', 'outcome', 'target', 'action'] as const) {
    if (typeof values[k] === 'string') f[k] = values[k];
  }
  if (values.all === true) f.all = true;
  return f;
}

/** Runs the CLI; returns the exit code. */
export async function main(
  argv: readonly string[],
  out: Writable = process.stdout,
  err: Writable = process.stderr,
): Promise<number> {
  const [command, ...rest] = argv;
  try {
    if (command === undefined || command === '--help' || command === '-h' || command === 'help') {
      await write(out, `${USAGE}\n`);
      return command === undefined ? 2 : 0;
    }
    const { values, positionals } = parseArgs({
      args: [...rest],
      options,
      allowPositionals: true,
      strict: true,
    });
    if (values.help) {
      await write(out, `${USAGE}\n`);
      return 0;
    }
    if (command === 'keygen') {
      if (!values.out) throw new UsageError('keygen needs --out DIR');
      mkdirSync(values.out, { recursive: true, mode: 0o700 });
      const { publicKey, privateKey } = generateKeyPairSync('ed25519');
      writeFileSync(
        join(values.out, 'audit-signing-key.pem'),
        privateKey.export({ type: 'pkcs8', format: 'pem' }),
        { mode: 0o600 },
      );
      writeFileSync(
        join(values.out, 'audit-public-key.pem'),
        publicKey.export({ type: 'spki', format: 'pem' }),
      );
      await write(
        out,
        `key id: ${keyIdOf(publicKey)}\nprivate: ${join(values.out, 'audit-signing-key.pem')} (GATEHOUSE_AUDIT_SIGNING_KEY_FILE)\npublic:  ${join(values.out, 'audit-public-key.pem')} (gatehouse-audit verify --key)\n`,
      );
      return 0;
    }
    if (positionals.length === 0)
      throw new UsageError(`${command} needs at least one FILE (or - for standard input)`);
    const keys = loadPublicKeys(values.key ?? []);
    // verify and report alike: a reviewer who opens the report holds the log to the witness too.
    const witness =
      values.witness === undefined ? {} : { witness: readWitness(values.witness, keys) };
    const filter = filterFrom(values);
    const keep = matcher(filter);

    if (command === 'verify') {
      const report = await verifyLines(readLines(positionals), {
        keys,
        allowOpenTail: values['allow-open-tail'] === true,
        ...witness,
      });
      await write(
        out,
        values.json
          ? `${jsonForTerminal(JSON.stringify(report, null, 2))}\n`
          : `${describe(report)}\n`,
      );
      return report.intact ? 0 : 1;
    }

    if (command === 'report') {
      if (!values.out) throw new UsageError('report needs --out FILE.html');
      const builder = new ReportBuilder();
      // Lifecycle and security events (start, stop, crash, refusals, overrides) belong in
      // every report: only the time and server filters apply to them.
      const lifecycle = matcher({
        all: true,
        ...(filter.from === undefined ? {} : { from: filter.from }),
        ...(filter.to === undefined ? {} : { to: filter.to }),
        ...(filter.server === undefined ? {} : { server: filter.server }),
      });
      const integrity = await verifyLines(readLines(positionals), {
        keys,
        allowOpenTail: values['allow-open-tail'] === true,
        ...witness,
        // A damaged log is reported whole, the damage marked where it is.
        continueAfterDamage: true,
        onDamage: (damage) => builder.markDamage(damage),
        onRecord: (r) => {
          if (CALLS.has(r.event.action) ? keep(r) : lifecycle(r)) builder.add(r);
          // Calls before the period: who was already known (the report names the newcomers).
          else if (filter.from !== undefined && r['@timestamp'] < filter.from) builder.notePrior(r);
        },
      });
      writeFileSync(
        values.out,
        builder.render({
          integrity,
          sources: positionals,
          ...(values.title ? { title: values.title } : {}),
        }),
      );
      await write(
        out,
        `${forTerminal(values.out)}: ${builder.calls} calls; ${forTerminal(verdict(integrity)[0])}\n`,
      );
      return integrity.intact ? 0 : 1;
    }

    if (command === 'query' || command === 'export') {
      const format = values.format ?? (command === 'query' ? 'table' : undefined);
      const formats = command === 'query' ? ['table', 'json'] : ['jsonl', 'csv', 'ocsf'];
      if (format === undefined || !formats.includes(format)) {
        throw new UsageError(`${command} --format must be one of ${formats.join(', ')}`);
      }
      const limit = values.limit === undefined ? Infinity : Number(values.limit);
      if (!(limit > 0)) throw new UsageError('--limit must be a positive number');
      let n = 0;
      if (format === 'csv') await write(out, `${csvHeader()}\n`);
      for await (const line of readLines(positionals)) {
        const r = line.record;
        if (r === undefined || !keep(r)) continue;
        if (n++ >= limit) break;
        if (format === 'table') {
          const row = Object.fromEntries(
            Object.entries(flatten(r)).map(([k, v]) => [k, forTerminal(v)]),
          ) as ReturnType<typeof flatten>;
          await write(
            out,
            `${row.timestamp}  ${row.outcome.padEnd(7)} ${row.reason.padEnd(14)} ${row.principal.padEnd(20)} ${row.action.padEnd(14)} ${row.name}${row.target ? ` → ${row.target}` : ''}${row.duration_ms ? `  ${row.duration_ms} ms` : ''}\n`,
          );
        } else if (format === 'csv') {
          await write(out, `${csvLine(r)}\n`);
        } else if (format === 'ocsf') {
          const event = toOcsf(r);
          if (event) await write(out, `${jsonForTerminal(JSON.stringify(event))}\n`);
        } else {
          await write(out, `${jsonForTerminal(JSON.stringify(r))}\n`);
        }
      }
      return 0;
    }
    throw new UsageError(`unknown command "${command}"`);
  } catch (error) {
    if (
      error instanceof UsageError ||
      (error as { code?: string }).code?.startsWith('ERR_PARSE_ARGS')
    ) {
      await write(err, `gatehouse-audit: ${forTerminal((error as Error).message)}\n\n${USAGE}\n`);
      return 2;
    }
    await write(err, `gatehouse-audit: ${forTerminal((error as Error).message)}\n`);
    return 2;
  }
}
