import type { Server } from 'node:http';
import { MemoryStore } from '@gpualert/state';
import { afterEach, describe, expect, it } from 'vitest';
import { createNotifierServer, NotifierMetrics } from './notifier-http.ts';
import { FIRING_KEY } from './notifier-state-store.ts';
import { loadSilences } from './silences.ts';

const TOKEN = 'notifier-token-0123456789';
const auth = { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' };
const servers: Server[] = [];
afterEach(async () => {
  for (const s of servers.splice(0)) {
    s.closeAllConnections();
    await new Promise((r) => s.close(r));
  }
});

/** A notifier API over a store whose firing alerts are 30 hosts' GpuHot and gpu-node-7's Xid, as the notifier saves them. */
async function serve() {
  const store = new MemoryStore();
  const firing: Record<string, string> = {};
  for (let i = 0; i < 30; i += 1)
    firing[`fp-hot-${i}`] = JSON.stringify({ version: 1, labels: { alertname: 'GpuHot', host: `gpu-node-${i}`, severity: 'warning' } });
  firing['fp-xid'] = JSON.stringify({ version: 1, labels: { alertname: 'XidError', host: 'gpu-node-7', severity: 'critical' } });
  firing['junk'] = '{"labels":"not labels"';
  await store.hashSet(FIRING_KEY, firing);
  const server = createNotifierServer(store, new NotifierMetrics(), TOKEN);
  servers.push(server);
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return { store, base: `http://127.0.0.1:${(server.address() as { port: number }).port}` };
}

const v2 = (matchers: { name: string; value: string; isRegex: boolean; isEqual: boolean }[], force?: boolean) => ({
  matchers,
  startsAt: new Date().toISOString(),
  endsAt: new Date(Date.now() + 3_600_000).toISOString(),
  createdBy: 'bo',
  comment: 'storm',
  ...(force === undefined ? {} : { force }),
});

describe('a silence that would silence what is firing across hosts is refused unless forced', () => {
  it('Alertmanager\'s API: host=~".+" and alertname!="" are refused with the count; "force": true makes them; one host\'s silence is made', async () => {
    const { base, store } = await serve();
    for (const matchers of [
      [{ name: 'host', value: '.+', isRegex: true, isEqual: true }],
      [{ name: 'alertname', value: '', isRegex: false, isEqual: false }],
    ]) {
      const refused = await fetch(`${base}/api/v2/silences`, { method: 'POST', headers: auth, body: JSON.stringify(v2(matchers)) });
      expect(refused.status).toBe(400);
      expect(await refused.json()).toMatch(
        /^this silence matches 31 of 31 firing alerts on 30 hosts: more than half of what is firing, on more than one host; make it with force/,
      );
    }
    expect(await loadSilences(store)).toEqual({});
    const forced = await fetch(`${base}/api/v2/silences`, {
      method: 'POST',
      headers: auth,
      body: JSON.stringify(v2([{ name: 'host', value: '.+', isRegex: true, isEqual: true }], true)),
    });
    expect(forced.status).toBe(200);
    const oneHost = await fetch(`${base}/api/v2/silences`, {
      method: 'POST',
      headers: auth,
      body: JSON.stringify(v2([{ name: 'host', value: 'gpu-node-7', isRegex: false, isEqual: true }])),
    });
    expect(oneHost.status).toBe(200);
    expect(Object.keys(await loadSilences(store))).toHaveLength(2);
  });

  it("gpualert's API says how far a silence it made reaches, and refuses a broad one with 400 JSON", async () => {
    const { base } = await serve();
    const post = (body: unknown) => fetch(`${base}/v1/silences`, { method: 'POST', headers: auth, body: JSON.stringify(body) });
    const made = await post({ matchers: ['host="gpu-node-7"'], duration_seconds: 600, created_by: 'bo', comment: 'swap' });
    expect(made.status).toBe(201);
    expect(await made.json()).toMatchObject({ reach: { matched: 2, firing: 31, hosts: 1 } });
    const broad = await post({ matchers: ['alertname="GpuHot"'], duration_seconds: 600, created_by: 'bo', comment: 'heat wave' });
    expect(broad.status).toBe(400);
    expect(await broad.json()).toMatchObject({ error: 'invalid_silence', message: expect.stringContaining('matches 30 of 31 firing alerts on 30 hosts') });
    const forced = await post({ matchers: ['alertname="GpuHot"'], duration_seconds: 600, created_by: 'bo', comment: 'heat wave', force: true });
    expect(forced.status).toBe(201);
    expect(await forced.json()).toMatchObject({ reach: { matched: 30, firing: 31, hosts: 30 } });
  });
});
