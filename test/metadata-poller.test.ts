import { readFileSync } from 'node:fs';
import { createServer } from 'node:http';
import { MemoryBus } from '@gpualert/bus';
import { startMetadataPoller } from '@gpualert/collectors';
import { createLogger } from '@gpualert/log';
import { parseEnvelope, TOPICS, type ProviderEventData } from '@gpualert/schema';
import { MemoryStore } from '@gpualert/state';
import { afterEach, describe, expect, it } from 'vitest';
import { close, listen } from './infra/http.ts';
import { waitFor } from './infra/wait-for.ts';

const log = createLogger({ name: 'test', level: 'silent' });
const fixture = (name: string) => readFileSync(new URL(`./fixtures/provider/${name}`, import.meta.url), 'utf8');
const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

/** A metadata service whose answer the test changes between polls. */
async function metadataServer(check: (headers: Record<string, string | string[] | undefined>) => boolean) {
  let answer: { status: number; body: string } = { status: 200, body: '{}' };
  let polls = 0;
  const server = createServer((req, res) => {
    polls += 1;
    if (!check(req.headers)) return void res.writeHead(400).end('missing the metadata header');
    if (req.method === 'PUT') return void res.writeHead(200).end('token');
    if (/spot|recommendations/.test(req.url ?? '')) return void res.writeHead(404).end(); // nothing pending there
    res.writeHead(answer.status, { 'content-type': 'application/json' }).end(answer.body);
  });
  const url = await listen(server);
  cleanups.push(() => close(server));
  return { url, set: (status: number, body: string) => (answer = { status, body }), polls: () => polls };
}

async function published(bus: MemoryBus): Promise<ProviderEventData[]> {
  return (await bus.read(TOPICS.providerEvents)).flatMap((m) => {
    const r = parseEnvelope(m.value);
    return r.ok && r.value.type === 'provider.event' ? [r.value.data] : [];
  });
}

describe('metadata pollers against a local metadata service', () => {
  it('azure: scheduled → started → gone becomes scheduled, started, completed, once each', async () => {
    const service = await metadataServer((h) => h.metadata === 'true');
    service.set(200, fixture('azure-scheduled-events-freeze-scheduled.json'));
    const bus = new MemoryBus();
    const store = new MemoryStore();
    const poller = startMetadataPoller({ bus, store, provider: 'azure', host: 'vm-7', endpoint: service.url, intervalMs: 30, timeoutMs: 500, log });
    cleanups.push(() => poller.stop());
    await waitFor(async () => (await published(bus)).length === 1, 'scheduled');
    service.set(200, fixture('azure-scheduled-events-freeze-started.json'));
    await waitFor(async () => (await published(bus)).length === 2, 'started');
    service.set(200, fixture('azure-scheduled-events-empty.json'));
    await waitFor(async () => (await published(bus)).length === 3, 'completed');
    const polls = service.polls();
    await waitFor(() => service.polls() >= polls + 3, 'three more polls');
    expect((await published(bus)).map((e) => [e.event_id, e.status, e.kind])).toEqual([
      ['c7061bac-afdc-4513-b24b-aa5f13a16123', 'scheduled', 'migration'],
      ['c7061bac-afdc-4513-b24b-aa5f13a16123', 'started', 'migration'],
      ['c7061bac-afdc-4513-b24b-aa5f13a16123', 'completed', 'migration'],
    ]);
  });

  it('gcp: a metadata service that is down is retried with backoff and nothing is lost', async () => {
    const service = await metadataServer((h) => h['metadata-flavor'] === 'Google');
    service.set(503, 'unavailable');
    const bus = new MemoryBus();
    const store = new MemoryStore();
    const poller = startMetadataPoller({ bus, store, provider: 'gcp', host: 'gpu-node-07', endpoint: service.url, intervalMs: 20, timeoutMs: 500, log });
    cleanups.push(() => poller.stop());
    await waitFor(() => service.polls() >= 3, 'a few failing polls');
    expect(await published(bus)).toEqual([]);
    service.set(200, fixture('gcp-upcoming-maintenance-metadata.json'));
    await waitFor(async () => (await published(bus)).length >= 1, 'the notice once the service is back', 10_000);
    expect((await published(bus))[0]).toMatchObject({ provider: 'gcp', status: 'scheduled', hosts: ['gpu-node-07'], window_start: '2024-12-01T19:00:01.000Z' });
  });

  it('aws-imds: uses the IMDSv2 token and resumes from the state store without re-publishing', async () => {
    const service = await metadataServer((h) => h['x-aws-ec2-metadata-token'] === 'token' || h['x-aws-ec2-metadata-token-ttl-seconds'] === '300');
    service.set(200, fixture('aws-imds-scheduled-events.json'));
    const bus = new MemoryBus();
    const store = new MemoryStore();
    const start = () => startMetadataPoller({ bus, store, provider: 'aws-imds', host: 'i-0abc', endpoint: service.url, intervalMs: 20, timeoutMs: 500, log });
    let poller = start();
    await waitFor(async () => (await published(bus)).length >= 1, 'the scheduled reboot');
    await poller.stop();
    poller = start();
    cleanups.push(() => poller.stop());
    const polls = service.polls();
    await waitFor(() => service.polls() >= polls + 8, 'polls after the restart');
    expect((await published(bus)).map((e) => [e.kind, e.status])).toEqual([['reboot', 'scheduled']]);
  });
});
