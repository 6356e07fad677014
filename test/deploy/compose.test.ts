import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { loadRoutes } from '@gpualert/notify';
import { createRequire } from 'node:module';
import { Ajv } from 'ajv';
import addFormats from 'ajv-formats';
import { parse } from 'yaml';
import { describe, expect, it } from 'vitest';

const ROOT = join(import.meta.dirname, '..', '..');
// The Compose Specification's own schema, vendored with its source (schemas/README.md).
const SCHEMA = JSON.parse(readFileSync(join(import.meta.dirname, 'schemas/compose-spec.json'), 'utf8')) as object;
const SERVICES_WITH_HEALTHZ = new Map([['intake', 9468], ['notifier', 9095], ['notifier-1', 9095], ['agent', 9469], ['engine', 9470]]);

interface Service {
  build?: unknown;
  image?: string;
  command?: string[];
  environment?: Record<string, string>;
  volumes?: string[];
  profiles?: string[];
  user?: string;
  cap_add?: string[];
  cap_drop?: string[];
  read_only?: boolean;
}

function compileCompose() {
  // strict: false: the spec uses keywords ajv's strict mode refuses in a draft-07 schema (`deprecated`).
  const ajv = new Ajv({ allErrors: true, strict: false });
  addFormats.default(ajv);
  // The spec names draft-07 by its https address; it is the same meta-schema ajv ships.
  const draft07 = createRequire(import.meta.url)('ajv/dist/refs/json-schema-draft-07.json') as object;
  ajv.addMetaSchema(draft07, 'https://json-schema.org/draft-07/schema');
  return ajv.compile(SCHEMA);
}

function load(text: string): { services: Record<string, Service> } {
  // merge: the `<<: *gpualert` keys, as Compose reads them.
  return parse(text, { merge: true }) as { services: Record<string, Service> };
}

describe('docker-compose.yml', () => {
  const text = readFileSync(join(ROOT, 'docker-compose.yml'), 'utf8');
  const compose = load(text);
  const validateCompose = compileCompose();
  const gpualert = Object.entries(compose.services).filter(([, s]) => s.build !== undefined);

  it('is valid against the Compose Specification schema', () => {
    const ok = validateCompose(compose);
    expect(validateCompose.errors ?? [], JSON.stringify(validateCompose.errors, null, 1)).toEqual([]);
    expect(ok).toBe(true);
  });

  it('the schema does reject what Compose would (a misspelt key, a command of the wrong type)', () => {
    expect(validateCompose(load('services:\n  engine:\n    image: x\n    restart_policy: always\n'))).toBe(false);
    expect(validateCompose(load('services:\n  engine:\n    image: x\n    command: { run: engine }\n'))).toBe(false);
  });

  it('runs every gpualert service from the image built here, never npm ci into a bind mount', () => {
    expect(gpualert.map(([name]) => name).sort()).toEqual(['agent', 'engine', 'intake', 'notifier', 'notifier-1']);
    for (const [name, service] of gpualert) {
      expect(service.build, name).toBe('.');
      expect(JSON.stringify(service.command), name).not.toMatch(/npm|npx|tsx/);
      expect(service.command?.[0], name).toBe(name.replace(/-\d+$/, ''));
      expect(service.volumes ?? [], name).not.toContain('.:/app');
    }
    expect(Object.keys(compose.services)).toEqual(expect.arrayContaining(['kafka', 'redis', 'mailcatcher', 'prometheus']));
  });

  it('points each service with a /healthz at its own port', () => {
    for (const [name, service] of gpualert) {
      const port = SERVICES_WITH_HEALTHZ.get(name);
      expect(service.environment?.GPUALERT_HEALTH_URL, name).toBe(port === undefined ? undefined : `http://127.0.0.1:${port}/healthz`);
    }
  });

  it('drops every capability, and gives the agent back only CAP_SYSLOG for /dev/kmsg', () => {
    for (const [name, service] of gpualert) {
      expect(service.cap_drop, name).toEqual(['ALL']);
      expect(service.read_only, name).toBe(true);
      expect(service.cap_add ?? [], name).toEqual(name === 'agent' ? ['SYSLOG'] : []);
    }
    expect(compose.services.agent?.profiles).toEqual(['gpu']);
  });

  it('gives the notifier a routes file that loads, and Prometheus a target for each /metrics', () => {
    const routes = loadRoutes(join(ROOT, 'deploy/compose/routes.yaml'));
    expect(routes.ok ? [] : routes.errors).toEqual([]);
    expect(compose.services.notifier?.volumes).toContain('./deploy/compose/routes.yaml:/etc/gpualert/routes.yaml:ro');
    const prometheus = parse(readFileSync(join(ROOT, 'deploy/compose/prometheus.yml'), 'utf8')) as {
      scrape_configs: { job_name: string; static_configs?: { targets: string[] }[]; dns_sd_configs?: { names: string[]; type: string; port: number }[] }[];
    };
    const targets = prometheus.scrape_configs.flatMap((c) => [
      ...(c.static_configs ?? []).flatMap((s) => s.targets),
      ...(c.dns_sd_configs ?? []).flatMap((d) => d.names.map((name) => `${name}:${d.port}`)),
    ]);
    expect(targets.sort()).toEqual([...SERVICES_WITH_HEALTHZ].map(([name, port]) => `${name}:${port}`).sort());
    // `--scale engine=3` puts every engine behind one name: only DNS discovery scrapes each (a
    // static target reaches one a scrape); test/prometheus/several-engines.test.ts runs it.
    const engine = prometheus.scrape_configs.find((c) => c.job_name === 'gpualert-engine');
    expect(engine?.static_configs).toBeUndefined();
    expect(engine?.dns_sd_configs).toEqual([expect.objectContaining({ names: ['engine'], type: 'A', port: 9470 })]);
  });

  it('runs the notifier as two named replicas of one cluster, on the same routes', () => {
    const replicas = gpualert.filter(([, s]) => s.command?.[0] === 'notifier');
    expect(replicas.map(([, s]) => s.environment?.GPUALERT_NOTIFIER_REPLICA).sort()).toEqual(['notifier-0', 'notifier-1']);
    for (const [name, s] of replicas) expect(s.volumes, name).toEqual(compose.services.notifier?.volumes);
  });

  it('mounts the dashboards where the Grafana provisioning shipped beside them reads them', () => {
    const provider = parse(readFileSync(join(ROOT, 'deploy/grafana/provisioning/dashboards/gpualert.yaml'), 'utf8')) as { providers: { options: { path: string } }[] };
    const mounts = (compose.services.grafana?.volumes ?? []).map((v) => String(v).split(':'));
    const dashboards = mounts.find(([from]) => from === './deploy/grafana/dashboards');
    expect(dashboards?.[1]).toBe(provider.providers[0]!.options.path);
    expect(mounts.find(([from]) => from === './deploy/grafana/provisioning')?.[1]).toBe('/etc/grafana/provisioning');
  });

  it('writes no secret into the file: each comes from the environment', () => {
    for (const [, service] of gpualert) {
      for (const [key, value] of Object.entries(service.environment ?? {})) {
        if (/SECRET|TOKEN|PASSWORD|KEY/.test(key)) expect(value, key).toMatch(/^\$\{[A-Z_]+:-\}$/);
      }
    }
  });
});
