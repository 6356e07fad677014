import { setImmediate as yieldToLoop } from 'node:timers/promises';
import { FLEET_NDJSON, isGpuIndex, isHostName, type FleetSnapshot } from '@gpualert/schema';
import type { EngineFleetView } from './engine-fleet-view.ts';

/** Hosts serialised between two turns of the event loop (10,000 hosts of 8 GPUs are some 40 MB of JSON). */
const HOSTS_PER_SLICE = 200;

/** A snapshot serialised once, host by host, and each body made of it once: the notifiers asking within the view's reuse time share them. */
interface Serialised {
  /** The snapshot with `hosts: []`, its first member. */
  readonly shell: string;
  readonly hosts: readonly string[];
  json?: string;
  ndjson?: string;
}
const serialised = new WeakMap<FleetSnapshot, Promise<Serialised>>();

async function serialise(snapshot: FleetSnapshot): Promise<Serialised> {
  const hosts: string[] = [];
  for (let i = 0; i < snapshot.hosts.length; i += 1) {
    if (i > 0 && i % HOSTS_PER_SLICE === 0) await yieldToLoop();
    hosts.push(JSON.stringify(snapshot.hosts[i]));
  }
  const { hosts: _, ...rest } = snapshot;
  return { shell: JSON.stringify({ hosts: [], ...rest }), hosts };
}

/**
 * The engine's answers to the console (the notifier's `engineFleetSource` asks them):
 * `GET /v1/fleet`: the FleetSnapshot of the hosts this engine owns (a host another engine owns is
 * not in it: the notifier merges them), as one JSON document, or as NDJSON when the request
 * accepts it (the notifier does: it reads host by host, yielding between, where one 40 MB
 * document held its event loop 0.4 s); `GET /v1/fleet/{host}/{gpu}/history`: one GPU's history
 * ring (GpuHistory), 404 for a GPU this engine has no history of. Read-only, no body, as `/metrics`.
 * Serialised host by host, yielding between; each body joined once per snapshot.
 */
export async function fleetViewAnswer(fleet: EngineFleetView, path: string, accept = ''): Promise<{ status: number; body: string; type: string }> {
  const json = (status: number, body: object) => ({ status, body: JSON.stringify(body), type: 'application/json' });
  if (path === '/v1/fleet') {
    const snapshot = await fleet.snapshot();
    let parts = serialised.get(snapshot);
    if (parts === undefined) serialised.set(snapshot, (parts = serialise(snapshot)));
    const made = await parts;
    const { shell, hosts } = made;
    // Joined once per snapshot and form (a string of the whole answer, as `res.end` needs it).
    if (accept.includes(FLEET_NDJSON)) return { status: 200, body: (made.ndjson ??= `${shell}\n${hosts.map((h) => `${h}\n`).join('')}`), type: FLEET_NDJSON };
    // The shell's first member (`{"hosts":[]`) filled in: the snapshot as one document.
    const at = '{"hosts":['.length;
    return { status: 200, body: (made.json ??= `${shell.slice(0, at)}${hosts.join(',')}${shell.slice(at)}`), type: 'application/json' };
  }
  const match = /^\/v1\/fleet\/([^/]+)\/(\d{1,3})\/history$/.exec(path);
  if (!match) return json(404, { error: 'not_found', message: 'GET /v1/fleet or /v1/fleet/{host}/{gpu}/history' });
  let host: string;
  try {
    host = decodeURIComponent(match[1] ?? '');
  } catch {
    return json(400, { error: 'bad_host', message: 'the host is not valid percent-encoding' });
  }
  const index = Number(match[2]);
  if (!isHostName(host)) return json(400, { error: 'bad_host', message: 'a host is 1 to 253 characters, none of them a control character' });
  if (!isGpuIndex(index)) return json(400, { error: 'bad_gpu', message: 'a GPU is its index, 0 to 255' });
  const history = await fleet.history(host, index);
  return history ? json(200, history) : json(404, { error: 'not_found', message: 'this engine keeps no history of that GPU' });
}
