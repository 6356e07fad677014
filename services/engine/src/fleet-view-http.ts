import { isGpuIndex, isHostName, type FleetSnapshot } from '@gpualert/schema';
import type { EngineFleetView } from './engine-fleet-view.ts';

/** One body per built snapshot: the notifiers asking within the view's reuse time share one serialisation. */
const bodies = new WeakMap<FleetSnapshot, string>();

/**
 * The engine's answers to the console (the notifier's `engineFleetSource` asks them):
 * `GET /v1/fleet`: the FleetSnapshot of the hosts this engine owns (a host another engine owns is
 * not in it: the notifier merges them); `GET /v1/fleet/{host}/{gpu}/history`: one GPU's history
 * ring (GpuHistory), 404 for a GPU this engine has no history of. Read-only, no body, as `/metrics`.
 */
export async function fleetViewAnswer(fleet: EngineFleetView, path: string): Promise<{ status: number; body: string }> {
  const json = (status: number, body: object) => ({ status, body: JSON.stringify(body) });
  if (path === '/v1/fleet') {
    const snapshot = await fleet.snapshot();
    let body = bodies.get(snapshot);
    if (body === undefined) bodies.set(snapshot, (body = JSON.stringify(snapshot)));
    return { status: 200, body };
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
