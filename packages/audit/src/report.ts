import { createHash } from 'node:crypto';
import { asText } from './neutral.js';
import type { AuditRecord } from './record.js';
import type { Damage, VerifyReport } from './verify.js';

/** The actions that are calls (the rest are lifecycle, security and checkpoint records). */
export const CALLS: ReadonlySet<string> = new Set(['tools/call', 'resources/read', 'prompts/get']);
const MAX_KEYS = 50_000;
const RECENT_FAILURES = 100;
const RECENT_WRITES = 500;
const RECENT_LIFECYCLE = 200;
/** Denials of one principal within one minute from which they are a burst worth a look. */
const BURST = 5;
/** Sanitiser flags that mean a text carried something hidden from a reader (injection's tools). */
const HIDDEN = new Set([
  'ansi',
  'control',
  'bidi',
  'tag',
  'zero_width',
  'variation_selector',
  'format',
]);

/** Every value put in the page: text, never markup, whatever its type (a log chooses it). */
const escape = (value: unknown): string =>
  asText(value).replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);

/** The page's one stylesheet; the CSP admits it by its hash and no other style at all. */
const STYLE = `body{font:14px/1.45 system-ui,-apple-system,"Segoe UI",sans-serif;margin:0 auto;max-width:1100px;padding:24px;color:#1d2330}
h1{font-size:22px;margin:0 0 4px} summary h3{display:inline-block} summary{cursor:pointer} h2{font-size:17px;margin:0 0 8px} h3{font-size:15px;margin:24px 0 8px}
.meta{color:#5b6475;margin-bottom:16px} code{font-size:12px}
.banner{border-radius:8px;padding:12px 16px;margin:12px 0 20px} .banner p{margin:0}
.ok{background:#e7f6ec;border:1px solid #37a060} .warn{background:#fff6e0;border:1px solid #d49a1f} .bad{background:#fdecec;border:1px solid #c0392b}
.kpis{display:flex;gap:12px;flex-wrap:wrap} .kpi{border:1px solid #d9dee8;border-radius:8px;padding:10px 14px;min-width:120px}
.kpi b{display:block;font-size:22px}
.grid{display:grid;grid-template-columns:repeat(auto-fit,minmax(320px,1fr));gap:16px}
table{border-collapse:collapse;width:100%;font-size:13px} th,td{text-align:left;padding:4px 6px;border-bottom:1px solid #eceff4;vertical-align:top}
td.n{text-align:right;font-variant-numeric:tabular-nums;width:70px}
.bar{display:block;width:100%;height:10px} .bar rect{fill:#4a7bd0} .bar.f rect{fill:#c0392b} td.barcell{width:40%}
.wrap{overflow-wrap:break-word;word-break:normal}
.findings{border:1px solid #d9dee8;border-radius:8px;padding:10px 16px;margin:12px 0 16px} .findings ol{margin:4px 0 0;padding-left:20px} .findings li{margin:3px 0}
.sev-high{color:#8e1e12;font-weight:600} .sev-medium{color:#8a5a00;font-weight:600} .sev-info{color:#37506f}
pre{white-space:pre-wrap;font-size:11px;margin:4px 0}
tr.damage td{background:#fdecec;color:#8e1e12;font-weight:600} tr.unverified td{color:#8a6d3b}
svg text{font-size:10px;fill:#5b6475}
`;

/**
 * Nothing runs, loads or styles but the page itself: no script, no request, no form, no base,
 * no style but {@link STYLE} (no injected `<style>`, no `style` attribute). CSP cannot forbid a
 * `<meta http-equiv=refresh>`; escaping every value is what keeps one out.
 */
const CSP = `default-src 'none'; style-src 'sha256-${createHash('sha256').update(STYLE).digest('base64')}'; img-src data:; base-uri 'none'; form-action 'none'`;

/** Counts per key, bounded: past MAX_KEYS distinct keys, the rest count as "(other)". */
class Counter {
  readonly #counts = new Map<string, number>();
  add(key: string, n = 1): void {
    const k = this.#counts.has(key) || this.#counts.size < MAX_KEYS ? key : '(other)';
    this.#counts.set(k, (this.#counts.get(k) ?? 0) + n);
  }
  top(n: number): Array<[string, number]> {
    return [...this.#counts.entries()]
      .sort((a, b) => b[1] - a[1] || (a[0] < b[0] ? -1 : 1))
      .slice(0, n);
  }
  get size(): number {
    return this.#counts.size;
  }
}

/** Keeps the last `n` items. */
class Recent<T> {
  readonly #items: T[] = [];
  total = 0;
  constructor(private readonly n: number) {}
  push(item: T): void {
    this.total++;
    this.#items.push(item);
    if (this.#items.length > this.n) this.#items.shift();
  }
  get items(): readonly T[] {
    return this.#items;
  }
}

interface Row {
  time: string;
  principal: string;
  action: string;
  name: string;
  target: string;
  reason: string;
  detail: string;
  /** The policy rule that decided, when one did (`bound_parameter`, `sql:statement_type`…). */
  rule: string;
  /** The configuration a start record carries. */
  config?: unknown;
  /** Read after the integrity damage: not verified. */
  unverified?: boolean;
  /** Not a record: the place where the damage is. */
  damage?: Damage;
}

/** What a lifecycle record says, in a line: the setting overridden, the crash, the refusal. */
function lifecycleDetail(r: AuditRecord): string {
  const g = r.gatehouse ?? {};
  // Values of the record as text (JSON for anything that is not a string).
  const t = (key: string): string => {
    const value = g[key];
    return value === undefined ? '' : typeof value === 'string' ? value : JSON.stringify(value);
  };
  switch (r.event.action) {
    case 'gatehouse/security_override':
      return `SECURITY CHECK OVERRIDDEN by ${t('setting')}${g.findings === undefined ? '' : `: ${t('findings')}`}`;
    case 'gatehouse/stop':
      return r.event.outcome === 'failure'
        ? `crashed${g.error === undefined ? '' : ` (${t('error')})`}`
        : `stopped (${t('reason')}${g.drained === false ? ', calls cut at the drain deadline' : ''})`;
    case 'gatehouse/config_refused':
      return `refused to start: ${Array.isArray(g.problems) ? g.problems.join('; ') : t('problems')}`;
    case 'gatehouse/start_refused':
      return `refused to start: ${t('reason')}`;
    case 'gatehouse/auth_failure':
      return `authentication failed: ${t('description')}`;
    case 'gatehouse/start':
      return `started${g.url === undefined ? '' : ` at ${t('url')}`}`;
    default:
      return '';
  }
}

const rowOf = (r: AuditRecord): Row => ({
  time: r['@timestamp'],
  principal: r.user?.id ?? '',
  action: r.event.action,
  name: r.mcp?.name ?? '',
  target: r.target?.resource ?? '',
  reason: r.event.reason,
  rule: r.policy?.rule ?? '',
  detail:
    r.error?.message ?? (r.args?.redacted === undefined ? '' : JSON.stringify(r.args.redacted)),
});

/**
 * Builds the reviewer's report in one streaming pass: memory holds counters and the most recent
 * failures and writes, never the log.
 */
export class ReportBuilder {
  calls = 0;
  /** Calls per minute (epoch minute → counts), while there are at most MAX_KEYS minutes. */
  readonly #minutes = new Map<number, { success: number; failure: number }>();
  #minutesComplete = true;
  /** Calls per hour (epoch hour → counts): the chart's data beyond MAX_KEYS minutes. */
  readonly #hours = new Map<number, { success: number; failure: number }>();
  readonly #reasons = new Counter();
  readonly #principals = new Counter();
  readonly #tools = new Counter();
  readonly #targets = new Counter();
  readonly #servers = new Counter();
  readonly #failures = new Recent<Row>(RECENT_FAILURES);
  readonly #writes = new Recent<Row>(RECENT_WRITES);
  readonly #lifecycle = new Counter();
  readonly #events = new Recent<Row>(RECENT_LIFECYCLE);
  #overrides = 0;
  readonly #overridden = new Counter();
  /** Calls that reached a server over HTTP without authentication (GATEHOUSE_AUTH=none). */
  readonly #unauthenticated = new Counter();
  #unauthenticatedCalls = 0;
  readonly #outgoingSecrets = new Recent<Row>(RECENT_FAILURES);
  /** Answers whose text carried hidden characters, by where they came from. */
  readonly #hidden = new Counter();
  readonly #hiddenFlags = new Map<string, Set<string>>();
  /** Answers from which a secret was scrubbed, by tool. */
  readonly #secretsScrubbed = new Counter();
  /** Denials per principal and minute. */
  readonly #denials = new Counter();
  readonly #writeTools = new Counter();
  /** Calls per upstream account a call acted as (`login@host`), and per credential kind. */
  readonly #accounts = new Counter();
  /** Calls in user mode that used the service credential (the operator's read fallback). */
  readonly #fallbacks = new Counter();
  /** Per server: the credential kinds its calls used (`user`, `service`, `service_fallback`). */
  readonly #kinds = new Map<string, Set<string>>();
  /** When each principal made its first call in the period; principals seen before it. */
  readonly #firstSeen = new Map<string, string>();
  readonly #knownBefore = new Set<string>();
  #priorSeen = false;
  /** Calls by what became of them, each counted once. */
  succeeded = 0;
  denied = 0;
  #from: string | undefined;
  #to: string | undefined;
  #damage: Damage | undefined;
  /** Records read after the damage (shown, marked, not verified). */
  unverified = 0;

  /** Marks the place of the integrity damage: the tables show it there, the records after it are flagged. */
  markDamage(damage: Damage): void {
    this.#damage = damage;
    const marker: Row = {
      time: '',
      principal: '',
      action: '',
      name: '',
      target: '',
      reason: damage.kind,
      rule: '',
      detail: damage.message,
      damage,
    };
    this.#failures.push(marker);
    this.#writes.push(marker);
    this.#events.push(marker);
  }

  /**
   * A call of the log outside the period the report covers (before `--from`): the principals it
   * names are not new in the period.
   */
  notePrior(r: AuditRecord): void {
    this.#priorSeen = true;
    if (CALLS.has(r.event.action) && this.#knownBefore.size < MAX_KEYS)
      this.#knownBefore.add(r.user?.id ?? '(none)');
  }

  add(r: AuditRecord): void {
    if (r.event.action === 'audit/checkpoint') return;
    const unverified = this.#damage !== undefined;
    if (unverified) this.unverified++;
    const row = (): Row => ({ ...rowOf(r), ...(unverified ? { unverified } : {}) });
    if (!CALLS.has(r.event.action)) {
      // Lifecycle and security events: in every report, whatever the filters.
      this.#lifecycle.add(r.event.action);
      if (r.event.action === 'gatehouse/security_override') {
        this.#overrides++;
        const setting = r.gatehouse?.setting;
        this.#overridden.add(typeof setting === 'string' ? setting : '(unnamed)');
      }
      if (r.event.action !== 'gatehouse/auth_failure' || this.#events.items.length < 50) {
        this.#events.push({
          ...row(),
          detail: lifecycleDetail(r),
          ...(r.event.action === 'gatehouse/start' && r.gatehouse?.config !== undefined
            ? { config: r.gatehouse.config }
            : {}),
        });
      }
      return;
    }
    this.calls++;
    const time = r['@timestamp'];
    this.#from = this.#from === undefined || time < this.#from ? time : this.#from;
    this.#to = this.#to === undefined || time > this.#to ? time : this.#to;
    const ok = r.event.outcome === 'success';
    const minute = Math.floor(Date.parse(time) / 60_000);
    if (Number.isFinite(minute)) {
      for (const [map, key] of [
        [this.#minutes, minute],
        [this.#hours, Math.floor(minute / 60)],
      ] as const) {
        const bucket = map.get(key) ?? { success: 0, failure: 0 };
        if (ok) bucket.success++;
        else bucket.failure++;
        if (map.has(key) || map.size < MAX_KEYS) map.set(key, bucket);
        else if (map === this.#minutes) this.#minutesComplete = false;
      }
    }
    this.#reasons.add(r.event.reason);
    const principal = r.user?.id ?? '(none)';
    this.#principals.add(principal);
    if (!this.#firstSeen.has(principal) && this.#firstSeen.size < MAX_KEYS)
      this.#firstSeen.set(principal, time);
    if (r.auth?.method === 'none' && r.mcp?.transport === 'http') {
      this.#unauthenticated.add(principal);
      this.#unauthenticatedCalls++;
    }
    if (ok) this.succeeded++;
    else if (r.event.reason === 'denied') {
      this.denied++;
      if (Number.isFinite(minute)) this.#denials.add(`${principal}\n${minute}`);
    }
    if (r.policy?.rule === 'outgoing_secret') this.#outgoingSecrets.push(row());
    const flags = r.sanitizer?.flags ?? [];
    const hidden = flags.filter((f) => HIDDEN.has(f));
    if (hidden.length > 0) {
      const source = `${r.service.name} · ${r.mcp?.name ?? r.event.action}${r.target ? ` · ${r.target.resource}` : ''}`;
      this.#hidden.add(source);
      const known = this.#hiddenFlags.get(source) ?? new Set<string>();
      for (const f of hidden) known.add(f);
      if (this.#hiddenFlags.size < MAX_KEYS || this.#hiddenFlags.has(source))
        this.#hiddenFlags.set(source, known);
    }
    if (flags.includes('secret'))
      this.#secretsScrubbed.add(`${r.service.name} · ${r.mcp?.name ?? r.event.action}`);
    this.#tools.add(`${r.service.name} · ${r.mcp?.name ?? r.event.action}`);
    this.#upstream(r);
    if (r.target) this.#targets.add(r.target.resource);
    this.#servers.add(r.service.name);
    if (!ok) {
      this.#failures.push(row());
    }
    if (r.tool?.access === 'write' && r.event.reason !== 'denied') {
      this.#writes.push(row());
      this.#writeTools.add(`${r.service.name} · ${r.mcp?.name ?? ''}`);
    }
  }

  /** Renders the self-contained HTML page (no scripts, no external requests). */
  render(options: {
    integrity: VerifyReport;
    title?: string;
    sources: readonly string[];
    generatedAt?: Date;
  }): string {
    const { integrity } = options;
    const title = options.title ?? 'Gatehouse audit report';
    const reasons = this.#reasons.top(20);
    const { checkpoints } = integrity;
    const proven = checkpoints.signed > 0 && checkpoints.verified === checkpoints.signed;
    const caveat =
      checkpoints.signed === 0
        ? ' Checkpoints are not signed: the chain proves order and completeness, not who wrote it.'
        : checkpoints.verified < checkpoints.signed
          ? ` ${checkpoints.signed - checkpoints.verified} signature(s) not checked: pass --key with the trusted public key.`
          : '';
    // Which trusted key vouched for the log: a reviewer compares it with the key they hold.
    const used = Object.entries(checkpoints.verifiedBy ?? {});
    const keysUsed =
      used.length === 0
        ? ''
        : ` with ${used.length > 1 ? 'keys' : 'key'} ${used.map(([id, n]) => `<code data-key-id="${escape(id)}">${escape(id)}</code>${used.length > 1 ? ` (${escape(n)})` : ''}`).join(', ')}`;
    const banner = integrity.intact
      ? `<section class="banner ${proven ? 'ok' : 'warn'}" data-integrity="intact"><h2>Integrity: intact${proven ? ', signatures verified' : ''}</h2><p>${escape(integrity.records)} records in ${escape(integrity.chains)} chain(s); ${escape(checkpoints.total)} checkpoints, ${escape(checkpoints.signed)} signed, <strong>${escape(checkpoints.verified)} signature(s) verified</strong>${keysUsed}.${escape(caveat)}${integrity.openTail > 0 ? ` ${escape(integrity.openTail)} record(s) after the last checkpoint (open tail accepted).` : ''}${integrity.startsAtSeq === undefined ? '' : ` The input starts mid-chain at seq ${escape(integrity.startsAtSeq)}.`}</p></section>`
      : `<section class="banner bad" data-integrity="damaged"><h2>Integrity: DAMAGED — ${escape(integrity.damage?.kind)}</h2><p>First bad record: <code>${escape(integrity.damage?.file)}:${escape(integrity.damage?.line)}</code>${integrity.damage?.seq === undefined ? '' : ` (seq ${escape(integrity.damage.seq)})`} — ${escape(integrity.damage?.message)}. The figures below cover the whole log: the ${escape(integrity.records)} records before the damage are verified, the <strong data-unverified="${escape(this.unverified)}">${escape(this.unverified)}</strong> from it on are not (marked <em>unverified</em> in the tables, the damage shown where it is).</p></section>`;
    const unsigned =
      integrity.intact &&
      integrity.lastSigned !== undefined &&
      integrity.lastSigned.unsignedAfter > 0
        ? `<section class="banner warn" data-integrity="unsigned-tail"><h2>The end of the log is not signed</h2><p>The last signed checkpoint covers seq ${escape(integrity.lastSigned.seq)}; the <strong>${escape(integrity.lastSigned.unsignedAfter)}</strong> record(s) after it are covered by no signature.</p></section>`
        : '';
    const overrides =
      this.#overrides > 0
        ? `<section class="banner bad" data-overrides="${this.#overrides}"><h2>Security checks overridden: ${this.#overrides}</h2><p>A server ran with a safety check turned off by configuration; see "Lifecycle and security events" below.</p></section>`
        : '';
    return `<!doctype html>
<html lang="en"><head><meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="${CSP}">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>${escape(title)}</title>
<style>${STYLE}</style></head><body>
<h1>${escape(title)}</h1>
<div class="meta">Generated ${escape((options.generatedAt ?? new Date()).toISOString())} from ${options.sources.map((s) => `<code>${escape(s)}</code>`).join(', ')}${this.#from ? ` · calls from ${escape(this.#from)} to ${escape(this.#to)}` : ''}</div>
${this.#findings(integrity)}
${banner}
${unsigned}
${overrides}
<div class="kpis" data-kpis="each call counted once">
<div class="kpi"><b data-kpi="calls">${this.calls}</b>calls</div>
<div class="kpi"><b data-kpi="succeeded">${this.succeeded}</b>succeeded</div>
<div class="kpi"><b data-kpi="denied">${this.denied}</b>denied by a rule</div>
<div class="kpi"><b data-kpi="errors">${this.calls - this.succeeded - this.denied}</b>failed otherwise</div>
<div class="kpi"><b data-kpi="writes">${this.#writes.total}</b>write actions</div>
<div class="kpi"><b data-kpi="principals">${this.#principals.size}</b>principals</div>
<div class="kpi"><b data-kpi="overrides">${this.#overrides}</b>security overrides</div>
</div>
<h3>Calls over time</h3>
${this.#timeChart()}
<div class="grid">
<div><h3>Outcomes</h3>${this.#barTable(reasons, 'outcomes', (k) => k !== 'ok')}</div>
<div><h3>Top principals</h3>${this.#barTable(this.#principals.top(15), 'principals')}</div>
<div><h3>Top tools</h3>${this.#barTable(this.#tools.top(15), 'tools')}</div>
<div><h3>Top targets</h3>${this.#barTable(this.#targets.top(15), 'targets')}</div>
${this.#accounts.size === 0 ? '' : `<div id="accounts"><h3>Calls per upstream account or database role</h3>${this.#barTable(this.#accounts.top(15), 'accounts')}</div>`}
</div>
<details open id="failures"><summary><h3>Denials and errors (latest ${this.#failures.items.length} of ${this.#failures.total})</h3></summary>
${this.#rows(this.#failures.items, 'failures')}</details>
<details open id="writes"><summary><h3>Write actions (latest ${this.#writes.items.length} of ${this.#writes.total})</h3></summary>
${this.#rows(this.#writes.items, 'writes')}</details>
<h3 id="lifecycle">Lifecycle and security events (latest ${this.#events.items.length} of ${this.#events.total})</h3>
${this.#barTable(this.#lifecycle.top(10), 'lifecycle')}
${this.#rows(this.#events.items, 'lifecycle-events')}
</body></html>
`;
  }

  /** Which upstream account and credential a call acted with (ADR 0026). */
  #upstream(r: AuditRecord): void {
    const kind = r.auth?.upstream;
    const effective = r.user?.effective;
    if (kind === undefined) {
      // Acted as someone without an upstream credential of theirs: a database role chosen for
      // the caller (servers/postgres, ADR 0027) — the report's calls per role.
      if (effective !== undefined) this.#accounts.add(`${effective.name} (${effective.domain})`);
      return;
    }
    const kinds = this.#kinds.get(r.service.name) ?? new Set<string>();
    kinds.add(kind);
    if (this.#kinds.size < MAX_KEYS) this.#kinds.set(r.service.name, kinds);
    // The name may itself be an e-mail (Atlassian's): the vendor's host in parentheses.
    if (effective !== undefined) this.#accounts.add(`${effective.name} (${effective.domain})`);
    else this.#accounts.add(kind === 'service' ? '(service credential)' : '(service, fallback)');
    if (kind === 'service_fallback')
      this.#fallbacks.add(`${r.service.name} · ${r.mcp?.name ?? r.event.action}`);
  }

  /**
   * What to look at first, before anything is counted: damage, security checks overridden, calls
   * over HTTP without authentication, writes refused for carrying a secret, answers that carried
   * hidden characters (by where they came from), secrets scrubbed from answers, bursts of
   * denials, writes, principals new in the period. Each item says how many and points at the
   * rows.
   */
  #findings(integrity: VerifyReport): string {
    const items: Array<{ kind: string; severity: 'high' | 'medium' | 'info'; html: string }> = [];
    const list = (entries: Array<[string, number]>, n = 5) =>
      entries
        .slice(0, n)
        .map(([k, c]) => `<code>${escape(k)}</code> (${escape(c)})`)
        .join(', ');
    if (!integrity.intact) {
      const d = integrity.damage!;
      items.push({
        kind: 'damage',
        severity: 'high',
        html: `Integrity damage (<b>${escape(d.kind)}</b>) at <code>${escape(d.file)}:${escape(d.line)}</code>: ${escape(d.message)}`,
      });
    } else if (
      integrity.checkpoints.signed > integrity.checkpoints.verified ||
      integrity.checkpoints.signed === 0
    ) {
      items.push({
        kind: 'signatures',
        severity: 'medium',
        html:
          integrity.checkpoints.signed === 0
            ? 'No signed checkpoints: the chain proves order and completeness, not who wrote the log.'
            : `${escape(integrity.checkpoints.signed - integrity.checkpoints.verified)} checkpoint signature(s) not checked: run with <code>--key</code>.`,
      });
    }
    if (this.#overrides > 0)
      items.push({
        kind: 'overrides',
        severity: 'high',
        html: `Security checks overridden by configuration: ${list(this.#overridden.top(5))} — <a href="#lifecycle">lifecycle</a>.`,
      });
    if (this.#unauthenticatedCalls > 0) {
      items.push({
        kind: 'unauthenticated',
        severity: 'high',
        html: `<b>${escape(this.#unauthenticatedCalls)}</b> call(s) reached a server over HTTP <b>without authentication</b> (GATEHOUSE_AUTH=none: whoever could reach the port), recorded as ${list(this.#unauthenticated.top(3))}.`,
      });
    }
    // A server acting as each person never acts as the service except where the operator let a
    // read fall back; a plain service call beside a person's is a configuration that changed
    // between starts, or a defect.
    const mixed = [...this.#kinds]
      .filter(
        ([, kinds]) => kinds.has('service') && (kinds.has('user') || kinds.has('service_fallback')),
      )
      .map(([server]) => server);
    if (mixed.length > 0)
      items.push({
        kind: 'service-in-user-mode',
        severity: 'high',
        html: `Calls acted with the <b>service credential</b> on a server whose other calls acted as each person: ${mixed.map((m) => `<code>${escape(m)}</code>`).join(', ')} — <a href="#accounts">upstream accounts</a>.`,
      });
    if (this.#fallbacks.size > 0)
      items.push({
        kind: 'service-fallback',
        severity: 'medium',
        html: `Calls in user mode used the service credential, as the operator's read fallback allows: ${list(this.#fallbacks.top(5))} — <a href="#accounts">upstream accounts</a>.`,
      });
    if (this.#outgoingSecrets.total > 0) {
      const who = new Counter();
      for (const r of this.#outgoingSecrets.items) who.add(`${r.principal} · ${r.name}`);
      items.push({
        kind: 'outgoing-secrets',
        severity: 'high',
        html: `<b>${escape(this.#outgoingSecrets.total)}</b> write(s) refused for carrying a secret out: ${list(who.top(5))} — <a href="#failures">denials</a>.`,
      });
    }
    if (this.#hidden.size > 0) {
      const sources = this.#hidden
        .top(5)
        .map(
          ([k, c]) =>
            `<code>${escape(k)}</code> (${escape(c)}: ${escape([...(this.#hiddenFlags.get(k) ?? [])].sort().join(', '))})`,
        )
        .join(', ');
      items.push({
        kind: 'hidden-content',
        severity: 'high',
        html: `Answers carried <b>hidden characters</b> (removed before the model read them) — text that hides instructions is how prompt injection works: ${sources}.`,
      });
    }
    if (this.#secretsScrubbed.size > 0)
      items.push({
        kind: 'secrets-scrubbed',
        severity: 'medium',
        html: `A secret was scrubbed from answers of ${list(this.#secretsScrubbed.top(5))}: an upstream returned one.`,
      });
    const bursts = this.#denials.top(MAX_KEYS).filter(([, c]) => c >= BURST);
    if (bursts.length > 0) {
      const shown = bursts.slice(0, 5).map(([key, c]) => {
        const [principal, minute] = key.split('\n');
        return `<code>${escape(principal)}</code> ${escape(c)} denials in the minute from ${escape(new Date(Number(minute) * 60_000).toISOString().slice(0, 16))}Z`;
      });
      items.push({
        kind: 'denial-bursts',
        severity: 'medium',
        html: `Bursts of denials (${BURST} or more a minute, probing?): ${shown.join('; ')} — <a href="#failures">denials</a>.`,
      });
    }
    if (this.#writes.total > 0)
      items.push({
        kind: 'writes',
        severity: 'info',
        html: `<b>${escape(this.#writes.total)}</b> write action(s): ${list(this.#writeTools.top(5))} — <a href="#writes">writes</a>.`,
      });
    const newcomers = [...this.#firstSeen]
      .filter(([p]) => !this.#knownBefore.has(p))
      .sort((a, b) => (a[1] < b[1] ? 1 : -1));
    if (newcomers.length > 0)
      items.push({
        kind: 'new-principals',
        severity: 'info',
        html: `${this.#priorSeen ? 'Principals first seen in the period' : 'Principals in this log, newest first call first'}: ${newcomers
          .slice(0, 8)
          .map(([p, t]) => `<code>${escape(p)}</code> (from ${escape(t.slice(0, 16))}Z)`)
          .join(', ')}${newcomers.length > 8 ? ` and ${escape(newcomers.length - 8)} more` : ''}.`,
      });
    const body =
      items.length === 0
        ? '<p data-finding="none">Nothing to look at first: no damage, overrides, unauthenticated calls, refused secrets, hidden content or bursts of denials.</p>'
        : `<ol>${items.map((i) => `<li data-finding="${i.kind}" class="sev-${i.severity}"><span>${i.severity === 'info' ? '' : `${i.severity.toUpperCase()}: `}</span>${i.html}</li>`).join('')}</ol>`;
    return `<section class="findings" data-findings="${items.length}"><h2>What to look at first</h2>${body}</section>`;
  }

  #timeChart(): string {
    if (this.#hours.size === 0) return '<p>No calls.</p>';
    // The finest step that shows the whole span in at most 120 bars, empty ones included: a log
    // of one busy hour gets minutes, a month gets days. Minutes while every minute was counted.
    const minutes = this.#minutesComplete ? this.#minutes : undefined;
    const source = minutes ?? this.#hours;
    const unit = minutes === undefined ? 60 : 1; // minutes per key of the source
    const keys = [...source.keys()];
    const first = Math.min(...keys) * unit;
    const last = Math.max(...keys) * unit;
    const steps = [1, 5, 15, 60, 360, 1440, 10_080].filter((m) => m % unit === 0 || m > unit);
    const step = steps.find((m) => Math.floor(last / m) - Math.floor(first / m) < 120) ?? 10_080;
    const start = Math.floor(first / step);
    const buckets = Array.from({ length: Math.floor(last / step) - start + 1 }, () => ({
      success: 0,
      failure: 0,
    }));
    for (const [key, counts] of source) {
      const b = buckets[Math.floor((key * unit) / step) - start]!;
      b.success += counts.success;
      b.failure += counts.failure;
    }
    const label = (index: number) => {
      const iso = new Date((start + index) * step * 60_000).toISOString();
      return step >= 1440 ? iso.slice(0, 10) : `${iso.slice(0, 16)}Z`;
    };
    const stepName =
      step >= 1440
        ? step === 1440
          ? 'day'
          : 'week'
        : step >= 60
          ? `${step / 60} h`
          : `${step} min`;
    const max = Math.max(1, ...buckets.map((b) => b.success + b.failure));
    const width = 1000;
    const height = 160;
    const barWidth = Math.max(1, Math.floor((width - 40) / buckets.length) - 2);
    const bars = buckets
      .map((b, i) => {
        const x = 40 + i * (barWidth + 2);
        const hs = Math.round((b.success / max) * (height - 20));
        const hf = Math.round((b.failure / max) * (height - 20));
        return `<g><title>${escape(label(i))}: ${b.success} ok, ${b.failure} failed</title><rect data-value="${b.success}" data-kind="success" x="${x}" y="${height - 14 - hs}" width="${barWidth}" height="${hs}" fill="#4a7bd0"/><rect data-value="${b.failure}" data-kind="failure" x="${x}" y="${height - 14 - hs - hf}" width="${barWidth}" height="${hf}" fill="#c0392b"/></g>`;
      })
      .join('');
    return `<svg data-chart="calls-over-time" data-step-minutes="${step}" data-bars="${buckets.length}" viewBox="0 0 ${width} ${height}" width="100%" role="img" aria-label="Calls per ${stepName}"><text x="0" y="12">${max}</text><text x="0" y="${height - 16}">0</text>${bars}<text x="40" y="${height - 2}">${escape(label(0))}</text><text x="${width}" y="${height - 2}" text-anchor="end">${escape(label(buckets.length - 1))}</text></svg><p class="meta">Calls per ${stepName} (UTC); blue succeeded, red failed.</p>`;
  }

  #barTable(
    entries: Array<[string, number]>,
    name: string,
    failure: (key: string) => boolean = () => false,
  ): string {
    if (entries.length === 0) return '<p>None.</p>';
    const max = Math.max(...entries.map(([, n]) => n));
    return `<table data-chart="${name}">${entries
      .map(
        ([key, n]) =>
          `<tr><td class="wrap">${escape(key)}</td><td class="n" data-value="${escape(n)}">${escape(n)}</td><td class="barcell"><svg class="bar${failure(key) ? ' f' : ''}" viewBox="0 0 100 10" preserveAspectRatio="none" aria-hidden="true"><rect width="${Math.max(1, Math.round((n / max) * 100))}" height="10" rx="1"/></svg></td></tr>`,
      )
      .join('')}</table>`;
  }

  #rows(rows: readonly Row[], name: string): string {
    if (rows.length === 0) return '<p>None.</p>';
    return `<table data-table="${name}"><tr><th>time</th><th>principal</th><th>call</th><th>target</th><th>outcome</th><th>rule</th><th>detail</th></tr>${[
      ...rows,
    ]
      .reverse()
      .map((r) =>
        r.damage !== undefined
          ? `<tr class="damage" data-damage="${escape(r.damage.kind)}"><td colspan="7">⚠ Integrity damage here (${escape(r.damage.kind)}) at <code>${escape(r.damage.file)}:${escape(r.damage.line)}</code>: ${escape(r.damage.message)}. Rows above this line are not verified.</td></tr>`
          : `<tr${r.unverified ? ' class="unverified" data-unverified="true"' : ''}><td>${escape(r.time)}${r.unverified ? ' <em>unverified</em>' : ''}</td><td>${escape(r.principal)}</td><td class="wrap">${escape(r.action)} ${escape(r.name)}</td><td class="wrap">${escape(r.target)}</td><td>${escape(r.reason)}</td><td data-rule="${escape(r.rule)}">${escape(r.rule)}</td><td class="wrap">${escape(r.detail.slice(0, 300))}${r.config === undefined ? '' : `<details data-config><summary>configuration it started with</summary><pre>${escape(JSON.stringify(r.config, null, 2).slice(0, 20_000))}</pre></details>`}</td></tr>`,
      )
      .join('')}</table>`;
  }
}
