import type { CloudIdentity } from './inventory.ts';

export type MetadataProvider = 'aws' | 'gcp' | 'azure';

/**
 * Asks the cloud's metadata service who this machine is, with a short timeout; nothing found
 * is fine (a bare-metal host). `endpoint` replaces the well-known address (tests use loopback).
 */
export async function probeCloud(providers: readonly MetadataProvider[], endpoint: string | undefined, timeoutMs: number): Promise<CloudIdentity | undefined> {
  for (const provider of providers) {
    try {
      const identity = await PROBES[provider](endpoint, timeoutMs);
      if (identity) return identity;
    } catch {
      // not this provider, or its metadata service is down: try the next
    }
  }
  return undefined;
}

const PROBES: Record<MetadataProvider, (endpoint: string | undefined, timeoutMs: number) => Promise<CloudIdentity | undefined>> = {
  async aws(endpoint, timeoutMs) {
    const base = endpoint ?? 'http://169.254.169.254';
    const token = await text(`${base}/latest/api/token`, timeoutMs, { method: 'PUT', headers: { 'X-aws-ec2-metadata-token-ttl-seconds': '60' } });
    const headers = { 'X-aws-ec2-metadata-token': token };
    const instanceId = await text(`${base}/latest/meta-data/instance-id`, timeoutMs, { headers });
    const instanceType = await text(`${base}/latest/meta-data/instance-type`, timeoutMs, { headers });
    return { provider: 'aws', instanceId, instanceType };
  },
  async gcp(endpoint, timeoutMs) {
    const base = endpoint ?? 'http://metadata.google.internal';
    const headers = { 'Metadata-Flavor': 'Google' };
    const instanceId = await text(`${base}/computeMetadata/v1/instance/id`, timeoutMs, { headers });
    const machineType = await text(`${base}/computeMetadata/v1/instance/machine-type`, timeoutMs, { headers });
    return { provider: 'gcp', instanceId, instanceType: machineType.split('/').pop() ?? machineType };
  },
  async azure(endpoint, timeoutMs) {
    const base = endpoint ?? 'http://169.254.169.254';
    const body = await text(`${base}/metadata/instance/compute?api-version=2021-02-01`, timeoutMs, { headers: { Metadata: 'true' } });
    const compute = JSON.parse(body) as { vmId?: string; vmSize?: string };
    return { provider: 'azure', ...(compute.vmId ? { instanceId: compute.vmId } : {}), ...(compute.vmSize ? { instanceType: compute.vmSize } : {}) };
  },
};

async function text(url: string, timeoutMs: number, init: RequestInit): Promise<string> {
  const response = await fetch(url, { ...init, signal: AbortSignal.timeout(timeoutMs) });
  if (!response.ok) throw new Error(`${url}: ${response.status}`);
  return (await response.text()).trim();
}
