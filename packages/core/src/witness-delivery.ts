/**
 * Audit checkpoints off the host, as they are made (docs/audit.md, "Witnesses"): a syslog server
 * over TCP (RFC 5424 messages, RFC 6587 octet-counted frames) and an OpenTelemetry collector
 * (OTLP/HTTP logs, the official exporter). A host that is taken over can rewrite its own log and
 * re-sign it with the key it holds; it cannot call back what a witness already received, and
 * `gatehouse-audit verify --witness` compares the two. Sending never blocks a request: each
 * witness queues, delivers in the background, reconnects, and says in the log when it cannot.
 */
import { hostname } from 'node:os';
import { createConnection } from 'node:net';
import type { Socket } from 'node:net';
import type { AuditRecord, CheckpointWitness } from '@gatehouse/audit';
import type { LogRecordExporter } from '@opentelemetry/sdk-logs';
import type { Logger } from './logger.js';

/** Checkpoints a witness keeps while its receiver is away; older ones are dropped (and said). */
const QUEUE_LIMIT = 1_000;
const RECONNECT_MS = [250, 500, 1_000, 2_000, 5_000];

/** RFC 5424 PRINTUSASCII fields: 1..max printable ASCII characters, or the nil value `-`. */
function field(text: string, max: number): string {
  const printable = text.replace(/[^\x21-\x7e]/g, '').slice(0, max);
  return printable === '' ? '-' : printable;
}

/**
 * A syslog witness: each checkpoint record as one RFC 5424 message (facility log audit, severity
 * informational; MSGID `checkpoint`; the record's JSON line as MSG), framed by octet counting over
 * TCP (RFC 6587), which rsyslog's imtcp and syslog-ng read as they come.
 */
export function syslogWitness(
  target: URL,
  options: { appName: string; logger: Logger },
): CheckpointWitness {
  const host = target.hostname.replace(/^\[|\]$/g, '');
  const port = Number(target.port || 514);
  const header = `${field(hostname(), 255)} ${field(options.appName, 48)} ${process.pid} checkpoint -`;
  const queue: Buffer[] = [];
  let socket: Socket | undefined;
  let connected = false;
  let attempt = 0;
  let timer: NodeJS.Timeout | undefined;
  let closing = false;
  let down = false;
  let dropped = 0;

  const frame = (record: AuditRecord, line: string): Buffer => {
    // PRI 110 = facility 13 (log audit) × 8 + severity 6 (informational); VERSION 1.
    const message = Buffer.from(`<110>1 ${record['@timestamp']} ${header} ${line.trimEnd()}`);
    return Buffer.concat([Buffer.from(`${message.length} `), message]);
  };

  const flush = (): void => {
    // Taken off the queue once handed to the kernel; a connection that dies with data in flight
    // may lose it (TCP syslog has no acknowledgement) — the next checkpoint covers it.
    while (connected && socket !== undefined && queue.length > 0) socket.write(queue.shift()!);
  };

  const connect = (): void => {
    if (socket !== undefined || closing) return;
    const s = createConnection({ host, port });
    socket = s;
    s.setNoDelay(true);
    s.once('connect', () => {
      connected = true;
      attempt = 0;
      if (down)
        options.logger.info({ witness: target.href }, 'audit witness (syslog) reachable again');
      down = false;
      flush();
    });
    s.on('error', (error) => {
      if (!down) {
        options.logger.error(
          { witness: target.href, err: error.message, queued: queue.length },
          'audit witness (syslog) unreachable: checkpoints are queued until it is back',
        );
      }
      down = true;
    });
    s.once('close', () => {
      socket = undefined;
      connected = false;
      if (closing || queue.length === 0) return;
      timer = setTimeout(connect, RECONNECT_MS[Math.min(attempt++, RECONNECT_MS.length - 1)]);
      timer.unref();
    });
  };

  return {
    name: `syslog ${target.host}`,
    send(record, line) {
      queue.push(frame(record, line));
      if (queue.length > QUEUE_LIMIT) {
        queue.shift();
        dropped++;
        options.logger.error(
          { witness: target.href, dropped },
          'audit witness (syslog) queue full: the oldest checkpoint was dropped',
        );
      }
      if (connected) flush();
      else connect();
    },
    async close(timeoutMs) {
      closing = true;
      if (timer !== undefined) clearTimeout(timer);
      const s = socket;
      if (s === undefined) {
        if (queue.length > 0)
          options.logger.error(
            { witness: target.href, undelivered: queue.length },
            'audit witness (syslog) unreachable at stop: checkpoints not delivered',
          );
        return;
      }
      await new Promise<void>((resolve) => {
        const give = setTimeout(() => {
          s.destroy();
          resolve();
        }, timeoutMs);
        give.unref();
        s.once('close', () => {
          clearTimeout(give);
          resolve();
        });
        if (connected) {
          flush();
          s.end();
        }
      });
    },
  };
}

/**
 * An OpenTelemetry witness: each checkpoint as a log record (body: the record's JSON line;
 * attributes: stream, seq, hash) through the official OTLP/HTTP logs exporter to a collector,
 * which forwards it to the SIEM the operator chose.
 */
export async function otlpWitness(
  endpoint: URL,
  options: { serviceName: string; serviceVersion: string; logger: Logger },
): Promise<CheckpointWitness> {
  const [
    { LoggerProvider, BatchLogRecordProcessor },
    { OTLPLogExporter },
    { resourceFromAttributes },
    api,
    { ExportResultCode },
  ] = await Promise.all([
    import('@opentelemetry/sdk-logs'),
    import('@opentelemetry/exporter-logs-otlp-http'),
    import('@opentelemetry/resources'),
    import('@opentelemetry/api'),
    import('@opentelemetry/core'),
  ]);
  // The exporter's outcome of each batch, said in the server's log when it changes: the SDK
  // itself reports export failures only to OpenTelemetry's diagnostics channel.
  const exporter = new OTLPLogExporter({ url: endpoint.href });
  let down = false;
  const watched: LogRecordExporter = {
    export: (logs, done) =>
      exporter.export(logs, (result) => {
        const failed = result.code !== ExportResultCode.SUCCESS;
        if (failed && !down) {
          options.logger.error(
            { witness: endpoint.href, err: result.error?.message },
            'audit witness (OTLP) did not take checkpoints: the collector is away or refused them',
          );
        } else if (!failed && down) {
          options.logger.info(
            { witness: endpoint.href },
            'audit witness (OTLP) takes checkpoints again',
          );
        }
        down = failed;
        done(result);
      }),
    shutdown: () => exporter.shutdown(),
    forceFlush: () => exporter.forceFlush(),
  };
  const provider = new LoggerProvider({
    resource: resourceFromAttributes({
      'service.name': options.serviceName,
      'service.version': options.serviceVersion,
      'host.name': hostname(),
    }),
    processors: [
      new BatchLogRecordProcessor({
        exporter: watched,
        scheduledDelayMillis: 200,
        maxQueueSize: QUEUE_LIMIT,
      }),
    ],
  });
  const logger = provider.getLogger('gatehouse-audit');
  return {
    name: `otlp ${endpoint.host}`,
    send(record, line) {
      logger.emit({
        eventName: 'audit/checkpoint',
        timestamp: new Date(record['@timestamp']),
        severityNumber: api.SeverityNumber.INFO,
        severityText: 'INFO',
        body: line.trimEnd(),
        attributes: {
          'gatehouse.audit.stream': record.audit.stream,
          'gatehouse.audit.seq': record.audit.seq,
          'gatehouse.audit.hash': record.audit.hash,
        },
      });
    },
    async close(timeoutMs) {
      const timeout = new Promise<'timeout'>((resolve) =>
        setTimeout(() => resolve('timeout'), timeoutMs).unref(),
      );
      const done = await Promise.race([provider.shutdown().then(() => 'done' as const), timeout]);
      if (done === 'timeout') {
        options.logger.error(
          { witness: endpoint.href },
          'audit witness (OTLP) did not take the last checkpoints before the stop',
        );
      }
    },
  };
}
