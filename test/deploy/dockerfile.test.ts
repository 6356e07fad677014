import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { DockerfileParser } from 'dockerfile-ast';
import { validate, ValidationSeverity, type ValidatorSettings } from 'dockerfile-utils';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

// dockerfile-utils (the linter behind VS Code's Dockerfile support) from the npm registry:
// hadolint is a Haskell binary in neither npm nor Debian, and dockerfilelint's rules stopped in
// 2020 (it rejects BuildKit's RUN --mount). Every optional check is raised to an error.
const ROOT = join(import.meta.dirname, '..', '..');
const DOCKERFILE = readFileSync(join(ROOT, 'Dockerfile'), 'utf8');
const STRICT: ValidatorSettings = {
  deprecatedMaintainer: ValidationSeverity.ERROR,
  directiveCasing: ValidationSeverity.ERROR,
  emptyContinuationLine: ValidationSeverity.ERROR,
  instructionCasing: ValidationSeverity.ERROR,
  instructionCmdMultiple: ValidationSeverity.ERROR,
  instructionEntrypointMultiple: ValidationSeverity.ERROR,
  instructionHealthcheckMultiple: ValidationSeverity.ERROR,
  instructionJSONInSingleQuotes: ValidationSeverity.ERROR,
  instructionWorkdirRelative: ValidationSeverity.ERROR,
};

function lint(content: string): string[] {
  return validate(content, STRICT).map((d) => `Dockerfile:${d.range.start.line + 1}: ${d.message}`);
}

describe('Dockerfile', () => {
  const dockerfile = DockerfileParser.parse(DOCKERFILE);
  const stages = dockerfile.getFROMs();
  const runtime = dockerfile.getInstructions().filter((i) => i.getRange().start.line >= stages.at(-1)!.getRange().start.line);
  const args = (keyword: string) => runtime.filter((i) => i.getKeyword() === keyword).map((i) => i.getArgumentsContent() ?? '');

  it('passes the linter with every check an error', () => {
    expect(lint(DOCKERFILE)).toEqual([]);
  });

  it('the linter does catch what it should (a bad HEALTHCHECK duration, a bare USER)', () => {
    expect(lint('FROM node:24-trixie-slim\nHEALTHCHECK --interval=30 CMD true\nUSER\n')).toHaveLength(2);
  });

  it('builds and packs in one stage, and runs on a slim Node 24 in another', () => {
    expect(stages).toHaveLength(2);
    const build = dockerfile.getInstructions().filter((i) => i.getKeyword() === 'RUN').map((i) => i.getArgumentsContent() ?? '').join('\n');
    // npm pack runs `prepack` (npm run build), so the tarball always holds a fresh dist/
    expect(build).toMatch(/npm ci[\s\S]*npm pack/);
    const image = dockerfile.getARGs().find((a) => a.getProperty()?.getName() === 'NODE_IMAGE')?.getProperty()?.getValue();
    expect(image).toMatch(/^node:24-[a-z]+-slim$/);
    expect(stages.at(-1)!.getImageName()).toBe('${NODE_IMAGE}');
    expect(args('RUN').join('\n')).toMatch(/npm install --global --omit=dev [^\n]*gpualert-\*\.tgz/);
  });

  it('runs as a numeric non-root user with the packed bin as entrypoint', () => {
    const user = args('USER').at(-1) ?? '';
    expect(user).toMatch(/^\d+:\d+$/);
    expect(Number(user.split(':')[0])).toBeGreaterThan(0);
    expect(args('ENTRYPOINT')).toEqual(['["gpualert"]']);
  });

  it('has one HEALTHCHECK, the script that reads GPUALERT_HEALTH_URL', () => {
    const checks = args('HEALTHCHECK');
    expect(checks).toHaveLength(1);
    expect(checks[0]).toContain('/usr/local/lib/gpualert/healthcheck.mjs');
    expect(args('COPY').join('\n')).toContain('deploy/docker/healthcheck.mjs /usr/local/lib/gpualert/healthcheck.mjs');
  });

  it('.dockerignore keeps installed modules and local secrets out of the build context', () => {
    const ignored = readFileSync(join(ROOT, '.dockerignore'), 'utf8').split('\n').map((l) => l.trim());
    expect(ignored).toEqual(expect.arrayContaining(['**/node_modules', '.git', '**/*.env']));
  });
});

describe('the image healthcheck script', () => {
  let server: Server;
  let base = '';
  beforeAll(async () => {
    server = createServer((request, response) => {
      response.statusCode = request.url === '/healthz' ? 200 : 503;
      response.end();
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));

  function check(url: string | undefined): Promise<{ code: number | null; stderr: string }> {
    const env = { ...process.env };
    delete env.GPUALERT_HEALTH_URL;
    if (url !== undefined) env.GPUALERT_HEALTH_URL = url;
    return new Promise((resolve, reject) => {
      const child = spawn(process.execPath, [join(ROOT, 'deploy/docker/healthcheck.mjs')], { env, stdio: ['ignore', 'ignore', 'pipe'] });
      let stderr = '';
      child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
      child.on('error', reject);
      child.on('close', (code) => resolve({ code, stderr }));
    });
  }

  it('passes on a 2xx from the service', async () => {
    expect((await check(`${base}/healthz`)).code).toBe(0);
  });

  it('fails, naming the URL and the status, on a 503', async () => {
    const result = await check(`${base}/unhealthy`);
    expect(result.code).toBe(1);
    expect(result.stderr).toContain('answered 503');
  });

  it('fails when nothing listens', async () => {
    server.close();
    const result = await check(`${base}/healthz`);
    expect(result.code).toBe(1);
    expect(result.stderr).toContain('unreachable');
  });

  it('passes with no URL set (the engine, which serves no HTTP)', async () => {
    expect((await check(undefined)).code).toBe(0);
  });
});
