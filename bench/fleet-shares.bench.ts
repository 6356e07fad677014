import { dict, SharedView, emptyFleetState, newHostState, shareOf, type HostState } from '@gpualert/engine';
import { measure } from './harness.ts';

/**
 * Fleet-wide judgement with several engines (issue 17): at every tick (2 s) each engine writes the
 * shares of the hosts it judged and reads every host's share back into its view. Here: 10,000 hosts
 * in 1,250 jobs of 8 and 10 clusters, half of them owned, as one engine of two sees them.
 */
export async function benchFleetShares(): Promise<void> {
  const HOSTS = 10_000;
  console.log(`\n## Fleet shares: ${HOSTS.toLocaleString('en-US')} hosts, one engine of two`);
  const owned = new Map<string, HostState>();
  const fleet = emptyFleetState();
  const stored = dict<string>();
  for (let i = 0; i < HOSTS; i += 1) {
    const name = `gpu-node-${String(i).padStart(5, '0')}`;
    const host = newHostState(name, { job: `job-${Math.floor(i / 8)}`, cluster: `cluster-${i % 10}` }, 'h100');
    (fleet.jobs[host.labels.job!] ??= dict())[name] = { util: 90 + (i % 7), at: 1_796_000_000_000 + i };
    (fleet.clusters[host.labels.cluster!] ??= dict())[name] = { driver: i % 97 === 0 ? '535.161.08' : '550.54.15', cuda: '12.4' };
    stored[name] = JSON.stringify(shareOf(fleet, host));
    if (i % 2 === 0) owned.set(name, host);
  }
  const owns = (host: string) => owned.has(host);
  await measure('flush: shares of the 5,000 owned hosts made and serialised', 'flushes/s', 7, () => {
    let bytes = 0;
    for (const host of owned.values()) bytes += JSON.stringify(shareOf(fleet, host)).length;
    return bytes > 0 ? 1 : 0;
  });
  const view = new SharedView();
  // Every share changed since the last refresh (each host's job share moves with each sample): made beforehand, not timed.
  const rounds = Array.from({ length: 7 }, (_, r) => {
    const next = dict<string>();
    for (const host of Object.keys(stored)) next[host] = stored[host]!.replace(/"at":(\d+)/, (_, at: string) => `"at":${Number(at) + r + 1}`);
    return next;
  });
  let round = 0;
  await measure('refresh: 10,000 stored shares, all changed, read into the view', 'refreshes/s', 7, () => {
    view.apply(fleet, rounds[round++ % rounds.length]!, owns);
    return 1;
  });
  await measure('refresh: the same, unchanged since the last', 'refreshes/s', 7, () => {
    view.apply(fleet, rounds[(round - 1) % rounds.length]!, owns);
    return 1;
  });
  const bytes = Object.values(stored).reduce((n, s) => n + s.length, 0);
  console.log(`${'shares in the store'.padEnd(58)} ${bytes.toLocaleString('en-US').padStart(12)} bytes (${Math.round(bytes / HOSTS)} a host)`);
}
