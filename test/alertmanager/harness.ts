import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { KafkaBus } from '@gpualert/bus/kafka';
import { TOPICS } from '@gpualert/schema';
import { inject } from 'vitest';
import { onFreePort, PORT_TAKEN, PortTaken } from '../infra/free-port.ts';
import { cleanEnv, startCli } from '../infra/run-cli.ts';
import { uniqueName, waitFor } from '../infra/wait-for.ts';
import { debianTool } from './debian-tool.ts';

export const TOKEN = 'alertmanager-compat-token-0123456789';

/** One payload a loopback webhook receiver took: the path it came to and Alertmanager's body. */
export interface Delivery {
  readonly path: string;
  readonly body: AlertmanagerWebhook;
}

export interface AlertmanagerWebhook {
  readonly receiver: string;
  readonly status: string;
  readonly version: string;
  readonly groupLabels: Record<string, string>;
  readonly commonLabels: Record<string, string>;
  readonly truncatedAlerts: number;
  readonly groupKey: string;
  readonly alerts: { status: 'firing' | 'resolved'; labels: Record<string, string>; annotations: Record<string, string>; endsAt: string }[];
}

/** A loopback HTTP receiver that keeps every JSON body it is sent. */
export class WebhookSink {
  readonly deliveries: Delivery[] = [];
  private server: Server | undefined;
  base = '';

  async start(): Promise<void> {
    this.server = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        try {
          this.deliveries.push({ path: req.url ?? '/', body: JSON.parse(Buffer.concat(chunks).toString('utf8')) as AlertmanagerWebhook });
        } catch {
          // not JSON: not a delivery
        }
        res.writeHead(200).end('ok');
      });
    });
    await new Promise<void>((resolve) => this.server!.listen(0, '127.0.0.1', resolve));
    this.base = `http://127.0.0.1:${(this.server.address() as { port: number }).port}`;
  }

  async stop(): Promise<void> {
    this.server?.closeAllConnections();
    await new Promise((resolve) => this.server?.close(resolve));
  }
}

export function tempDir(prefix: string): string {
  return mkdtempSync(join(tmpdir(), `gpualert-${prefix}-`));
}

/** A free loopback port (for programs that need one named on their command line; see startToolOnFreePort). */
export { freePort } from '../infra/free-port.ts';

/** `gpualert notifier` on the test's Kafka and Redis with this routes file, its API on a loopback port. */
export async function startGpualertNotifier(routesYaml: string, cleanups: (() => Promise<void>)[]) {
  const prefix = `${uniqueName('amcompat')}.`;
  const bus = new KafkaBus({ brokers: [inject('kafkaBrokers')], topicPrefix: prefix, partitions: 1 });
  await bus.ensureTopics(Object.values(TOPICS));
  cleanups.push(() => bus.close());
  const file = join(tempDir('am-routes'), 'alertmanager.yml');
  writeFileSync(file, routesYaml);
  const env = cleanEnv({
    KAFKA_BROKERS: inject('kafkaBrokers'),
    REDIS_URL: inject('redisUrl'),
    GPUALERT_TOPIC_PREFIX: prefix,
    GPUALERT_KEY_PREFIX: `${uniqueName('amcompat')}:`,
    GPUALERT_ROUTES: file,
    GPUALERT_NOTIFIER_PORT: '0',
    GPUALERT_NOTIFIER_LISTEN: '127.0.0.1',
    GPUALERT_NOTIFIER_TOKEN: TOKEN,
    GPUALERT_LOG_FORMAT: 'json',
  });
  const notifier = startCli(['notifier'], env);
  cleanups.push(async () => {
    if (notifier.exitCode === null) {
      notifier.kill('SIGTERM');
      await once(notifier, 'exit');
    }
  });
  await waitFor(() => /notifier_listening/.test(notifier.output()) || notifier.exitCode !== null, 'gpualert notifier', 60_000);
  const port = /"port":(\d+)[^\n]*notifier_listening|notifier_listening[^\n]*"port":(\d+)/.exec(notifier.output());
  if (!port) throw new Error(`gpualert notifier did not start:\n${notifier.output()}`);
  return { base: `http://127.0.0.1:${port[1] ?? port[2]}`, bus, notifier, file };
}

/** amtool 0.25 (Debian's) against `url`, the bearer token through --http.config.file. */
export function amtool(url: string, args: readonly string[], token = TOKEN): { code: number | null; out: string } {
  const dir = tempDir('amtool');
  const httpConfig = join(dir, 'http.yml');
  writeFileSync(httpConfig, `authorization:\n  credentials: ${token}\n`);
  const run = spawnSync(debianTool('prometheus-alertmanager', 'amtool'), [`--alertmanager.url=${url}`, `--http.config.file=${httpConfig}`, ...args], {
    encoding: 'utf8',
    env: { ...process.env, HOME: dir },
    timeout: 30_000,
  });
  return { code: run.status, out: `${run.stdout}${run.stderr}` };
}

/**
 * startTool listening on a free loopback port (`args` puts it on the command line), started again
 * on a new port when another process took it first. Resolves once the tool itself says it listens
 * (Prometheus' and Alertmanager's `msg="Listening on"`), so requests to the port reach this tool.
 */
export async function startToolOnFreePort(
  binary: string,
  args: (port: number) => readonly string[],
  cleanups: (() => Promise<void>)[],
  cwd?: string,
): Promise<{ tool: ChildProcess & { output: () => string }; port: number }> {
  return onFreePort(async (port) => {
    const tool = startTool(binary, args(port), cleanups, cwd);
    let closed = false;
    tool.once('close', () => (closed = true));
    const listening = new RegExp(`msg="Listening on" address=127\\.0\\.0\\.1:${port}\\b`);
    await waitFor(() => listening.test(tool.output()) || closed, `${binary} to listen on port ${port}`, 60_000);
    if (listening.test(tool.output())) return { tool, port };
    if (PORT_TAKEN.test(tool.output())) throw new PortTaken(port, tool.output());
    throw new Error(`${binary} exited with ${String(tool.exitCode)} before it listened:\n${tool.output().slice(-2000)}`);
  });
}

/** A long-running program from Debian's packages, its output kept, stopped with the test. */
export function startTool(binary: string, args: readonly string[], cleanups: (() => Promise<void>)[], cwd?: string): ChildProcess & { output: () => string } {
  const child = spawn(binary, args, { stdio: ['ignore', 'pipe', 'pipe'], ...(cwd ? { cwd } : {}) });
  let output = '';
  child.stdout.on('data', (c: Buffer) => (output += c.toString()));
  child.stderr.on('data', (c: Buffer) => (output += c.toString()));
  cleanups.push(async () => {
    if (child.exitCode === null) {
      child.kill('SIGTERM');
      await once(child, 'exit');
    }
  });
  return Object.assign(child, { output: () => output });
}
