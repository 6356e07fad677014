import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { MALLOC_ARENA_MAX, serviceEnv } from '../../tools/service-env.ts';

const ROOT = join(import.meta.dirname, '..', '..');
const read = (path: string) => readFileSync(join(ROOT, path), 'utf8');
const SERVICES = ['agent', 'engine', 'intake', 'notifier'] as const;

/** The `ENV` of an image file, continuation lines joined: NAME=value pairs. */
function imageEnv(file: string): Record<string, string> {
  const env: Record<string, string> = {};
  for (const instruction of read(file).replace(/\\\n\s*/g, ' ').split('\n')) {
    for (const pair of /^ENV\s+(.*)$/.exec(instruction)?.[1]?.split(/\s+/) ?? []) {
      const [name, ...value] = pair.split('=');
      if (name) env[name] = value.join('=');
    }
  }
  return env;
}

/** A unit's `Environment=` assignments (a later one wins). */
function unitEnv(file: string): Record<string, string> {
  const env: Record<string, string> = {};
  for (const match of read(file).matchAll(/^Environment=([A-Z_]+)=(.*)$/gm)) env[match[1]!] = match[2]!;
  return env;
}

/** The container's own `env` values of a Kubernetes manifest (its first document that has them). */
function podEnv(file: string, container: string): Record<string, string> {
  type Pod = { spec?: { template?: { spec?: { containers?: { name: string; env?: { name: string; value?: string }[] }[] } } } };
  const manifest = parse(read(file)) as Pod;
  const found = manifest.spec?.template?.spec?.containers?.find((c) => c.name === container);
  return Object.fromEntries((found?.env ?? []).flatMap((e) => (e.value === undefined ? [] : [[e.name, e.value]])));
}

describe('the settings the services ship with (tools/service-env.ts)', () => {
  it('both images set the malloc arenas for every service, and no NODE_OPTIONS that would reach the engine', () => {
    for (const file of ['Dockerfile', 'deploy/docker/Containerfile']) {
      const env = imageEnv(file);
      expect([env.MALLOC_ARENA_MAX, env.NODE_OPTIONS], file).toEqual([MALLOC_ARENA_MAX, undefined]);
    }
  });

  it('every systemd unit carries its service’s settings, and only those', () => {
    for (const service of SERVICES) expect(unitEnv(`deploy/systemd/gpualert-${service}.service`), service).toEqual(serviceEnv(service));
  });

  it('each Kubernetes manifest and the compose file set their service’s NODE_OPTIONS, the engine none', () => {
    const manifests = {
      agent: 'deploy/kubernetes/agent-daemonset.yaml',
      engine: 'deploy/kubernetes/engine-deployment.yaml',
      intake: 'deploy/kubernetes/intake-deployment.yaml',
      notifier: 'deploy/kubernetes/notifier-statefulset.yaml',
    };
    const compose = parse(read('docker-compose.yml'), { merge: true }) as { services: Record<string, { environment?: Record<string, string> }> };
    for (const service of SERVICES) {
      expect(podEnv(manifests[service], service).NODE_OPTIONS, manifests[service]).toBe(serviceEnv(service).NODE_OPTIONS);
      expect(compose.services[service]?.environment?.NODE_OPTIONS, `docker-compose.yml ${service}`).toBe(serviceEnv(service).NODE_OPTIONS);
    }
  });
});
