import { describe, expect, it } from 'vitest';
import { describeReach, silenceMatchers, silenceReach, tooBroad } from './silence-reach.ts';

const firing = [
  { alertname: 'GpuHot', host: 'gpu-node-1', severity: 'warning' },
  { alertname: 'GpuHot', host: 'gpu-node-2', severity: 'warning' },
  { alertname: 'XidError', host: 'gpu-node-2', severity: 'critical' },
  { alertname: 'NodeDown', instance: 'gpu-node-3:9400', severity: 'critical' },
];
const reachOf = (...texts: string[]) => silenceReach(silenceMatchers(texts)!, firing);

describe('how far a silence reaches into what is firing', () => {
  it('the silences that silence everything as Alertmanager lets them are too broad', () => {
    for (const texts of [['alertname!=""'], ['severity!~"^$"'], ['alertname=~".+"'], ['{severity=~"warning|critical"}']]) {
      const reach = reachOf(...texts);
      expect(reach, texts.join(' ')).toEqual({ matched: 4, firing: 4, hosts: 3 });
      expect(tooBroad(reach)).toBe(true);
    }
    // gpualert's own alerts carry host; host=~".+" reaches all of them (and Prometheus' instance-only ones not)
    expect(reachOf('host=~".+"')).toEqual({ matched: 3, firing: 4, hosts: 2 });
    expect(tooBroad(reachOf('host=~".+"'))).toBe(true);
  });

  it("one host's maintenance is never too broad, nor a silence of half of what fires or less", () => {
    expect(reachOf('host="gpu-node-2"')).toEqual({ matched: 2, firing: 4, hosts: 1 });
    expect(tooBroad(silenceReach(silenceMatchers(['host="gpu-node-2"'])!, firing.slice(1, 3)))).toBe(false); // every firing alert, one host
    expect(tooBroad(reachOf('alertname="GpuHot"'))).toBe(false); // 2 of 4
    expect(tooBroad(silenceReach(silenceMatchers(['alertname!=""'])!, []))).toBe(false); // nothing fires
    expect(describeReach(reachOf('severity="critical"'))).toBe('matches 2 of 4 firing alerts on 2 hosts');
  });

  it('alerts that name no host each count as a host of their own, and what was not read is said', () => {
    const hostless = Array.from({ length: 30 }, (_, i) => ({ alertname: 'NodeJob', node: `n${i}` }));
    const reach = silenceReach(silenceMatchers(['alertname!=""'])!, hostless, 7);
    expect(reach).toEqual({ matched: 30, firing: 30, hosts: 30, unread: 7 });
    expect(tooBroad(reach)).toBe(true);
    expect(describeReach(reach)).toBe('matches 30 of 30 firing alerts read (7 more firing not read) on 30 hosts');
  });
});
