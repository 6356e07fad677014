import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { AGENT_ENV, SERVICE_ENV } from '../../tools/service-env.ts';

const ROOT = join(import.meta.dirname, '..', '..');
const read = (path: string) => readFileSync(join(ROOT, path), 'utf8');

/** The `ENV` of an image file, continuation lines joined: NAME=value pairs. */
function imageEnv(file: string): Map<string, string> {
  const env = new Map<string, string>();
  for (const instruction of read(file).replace(/\\\n\s*/g, ' ').split('\n')) {
    const match = /^ENV\s+(.*)$/.exec(instruction);
    for (const pair of match?.[1]?.split(/\s+/) ?? []) {
      const [name, ...value] = pair.split('=');
      if (name) env.set(name, value.join('='));
    }
  }
  return env;
}

/** A unit's `Environment=` assignments, in order (a later one wins). */
function unitEnv(file: string): Map<string, string> {
  const env = new Map<string, string>();
  for (const match of read(file).matchAll(/^Environment=([A-Z_]+)=(.*)$/gm)) env.set(match[1]!, match[2]!);
  return env;
}

describe('the settings the services ship with (tools/service-env.ts)', () => {
  it('both images carry the services’ V8 and malloc settings', () => {
    for (const file of ['Dockerfile', 'deploy/docker/Containerfile']) {
      const env = imageEnv(file);
      expect([env.get('NODE_OPTIONS'), env.get('MALLOC_ARENA_MAX')], file).toEqual([SERVICE_ENV.NODE_OPTIONS, SERVICE_ENV.MALLOC_ARENA_MAX]);
    }
  });

  it('every systemd unit carries its own, the agent the agent’s', () => {
    for (const unit of ['agent', 'engine', 'intake', 'notifier']) {
      const want = unit === 'agent' ? AGENT_ENV : SERVICE_ENV;
      const env = unitEnv(`deploy/systemd/gpualert-${unit}.service`);
      expect(Object.fromEntries(env), unit).toEqual({ ...want });
    }
  });

  it('the agent’s DaemonSet sets the agent’s NODE_OPTIONS over the image’s', () => {
    const daemonset = parse(read('deploy/kubernetes/agent-daemonset.yaml')) as {
      spec: { template: { spec: { containers: { name: string; env: { name: string; value?: string }[] }[] } } };
    };
    const agent = daemonset.spec.template.spec.containers.find((c) => c.name === 'agent');
    expect(agent?.env.find((e) => e.name === 'NODE_OPTIONS')?.value).toBe(AGENT_ENV.NODE_OPTIONS);
  });
});
