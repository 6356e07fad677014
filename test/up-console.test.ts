import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { BIN, cleanEnv, startCli } from './infra/run-cli.ts';
import { waitFor } from './infra/wait-for.ts';

const dataDir = () => mkdtempSync(join(tmpdir(), 'gpualert-up-console-'));

/** `gpualert …` on a pseudo-terminal (util-linux `script`), as a person at a shell runs it. */
function onTerminal(args: readonly string[], env: NodeJS.ProcessEnv) {
  const command = [process.execPath, BIN, ...args].map((a) => `'${a.replace(/'/g, `'\\''`)}'`).join(' ');
  const child = spawn('script', ['-qfec', command, '/dev/null'], { env, stdio: ['pipe', 'pipe', 'pipe'] });
  let output = '';
  child.stdout.on('data', (c: Buffer) => (output += c.toString()));
  child.stderr.on('data', (c: Buffer) => (output += c.toString()));
  // Ctrl-C typed at the terminal: the pseudo-terminal turns it into SIGINT for gpualert.
  return Object.assign(child, { output: () => output, interrupt: () => child.stdin.write('\x03') });
}

describe('gpualert up on a terminal and off it', () => {
  it('on a terminal: a start banner, the alert lines and readable warnings; no JSON', async () => {
    const up = onTerminal(
      ['up', '--demo', '--speed', '600', '--data-dir', dataDir()],
      cleanEnv({ GPUALERT_INTAKE_PORT: '0', GPUALERT_INTAKE_LISTEN: '127.0.0.1' }),
    );
    await waitFor(() => up.output().includes('[fallen_off_bus]'), 'the lost GPU', 30_000);
    up.interrupt();
    await once(up, 'exit');
    const lines = up
      .output()
      .split(/\r?\n/)
      .filter((l) => l.trim() !== '');
    expect(lines.filter((l) => l.trimStart().startsWith('{'))).toEqual([]);
    expect(up.output()).toMatch(/gpualert up \(embedded: in-process bus, in-memory store\), ready in \d+ ms/);
    expect(up.output()).toMatch(/ intake +listening on port \d+/);
    expect(up.output()).toMatch(/CRITICAL.*gpu-node-002 GPU 3 +\[fallen_off_bus\]/);
    // a warning still reaches the person, as one readable line
    expect(up.output()).toMatch(/WARN .*intake +intake_has_no_credentials: set GPUALERT_INTAKE_SECRETS/);
    expect(up.output()).toContain('stopping (SIGINT)');
  });

  it('off a terminal: JSON lines, each with exactly one `service` key', async () => {
    const up = startCli(
      ['up', '--demo', '--speed', '600', '--data-dir', dataDir()],
      cleanEnv({ GPUALERT_INTAKE_PORT: '0', GPUALERT_INTAKE_LISTEN: '127.0.0.1' }),
    );
    await waitFor(() => up.output().includes('[fallen_off_bus]'), 'the lost GPU', 30_000);
    up.kill('SIGINT');
    expect((await once(up, 'exit'))[0]).toBe(0);
    const logLines = up
      .output()
      .split('\n')
      .filter((l) => l.startsWith('{'));
    expect(logLines.length).toBeGreaterThan(5);
    const services = new Set<string>();
    for (const line of logLines) {
      expect(line.match(/"service":/g), line).toHaveLength(1);
      services.add((JSON.parse(line) as { service: string }).service);
    }
    expect([...services]).toEqual(expect.arrayContaining(['gpualert-up', 'engine', 'intake', 'notifier']));
    expect(up.output()).not.toContain('gpualert up (embedded');
  });

  it('a port in use is one readable line that names the setting that moves it; the rest runs', async () => {
    const blocker = createServer();
    await new Promise<void>((resolve) => blocker.listen(0, '127.0.0.1', resolve));
    const port = (blocker.address() as { port: number }).port;
    try {
      const up = startCli(
        ['up', '--log-format', 'pretty', '--data-dir', dataDir()],
        cleanEnv({ GPUALERT_INTAKE_PORT: String(port), GPUALERT_INTAKE_LISTEN: '127.0.0.1' }),
      );
      await waitFor(() => up.output().includes('Ctrl-C stops'), 'the banner', 20_000);
      up.kill('SIGINT');
      expect((await once(up, 'exit'))[0]).toBe(0);
      expect(up.output()).toContain(`intake did not start: port ${port} is in use; choose another with --intake-port or GPUALERT_INTAKE_PORT`);
      expect(up.output()).toMatch(/ engine +running/);
      expect(up.output()).not.toContain('EADDRINUSE');
      expect(up.output()).not.toMatch(/^\{/m);
    } finally {
      blocker.close();
    }
  });

  it('`gpualert intake` on a port in use: one line naming --port and GPUALERT_INTAKE_PORT, exit 1', async () => {
    const blocker = createServer();
    await new Promise<void>((resolve) => blocker.listen(0, '127.0.0.1', resolve));
    const port = (blocker.address() as { port: number }).port;
    try {
      const { runCli } = await import('./infra/run-cli.ts');
      const result = await runCli(['intake', '--port', String(port), '--listen', '127.0.0.1'], {
        env: cleanEnv({ GPUALERT_INTAKE_TOKEN: 'a-token-of-twenty-chars' }),
      });
      expect(result.code).toBe(1);
      expect(result.stderr.trim().split('\n').at(-1)).toBe(
        `error[GA-CLI-FAILED]: gpualert intake: port ${port} is in use; choose another with --port or GPUALERT_INTAKE_PORT (0 picks a free one)`,
      );
    } finally {
      blocker.close();
    }
  });

  it('a receiver that cannot work stops `up` with one line and exit 2, rather than running without its notifier', async () => {
    const dir = dataDir();
    const routes = join(dir, 'routes.yaml');
    writeFileSync(routes, 'receivers:\n  - name: chat\n    channel: slack\n    settings:\n      url: env:MY_SLACK\nroute:\n  receiver: chat\n');
    const { runCli } = await import('./infra/run-cli.ts');
    const result = await runCli(['up', '--routes', routes, '--data-dir', dir, '--log-format', 'json'], {
      env: cleanEnv({ GPUALERT_INTAKE_PORT: '0', GPUALERT_INTAKE_LISTEN: '127.0.0.1', MY_SLACK: 'hooks.slack.com/services/T0/B0/XSECRETX' }),
    });
    expect(result.code).toBe(2);
    expect(result.stderr.trim().split('\n').at(-1)).toMatch(
      /^error\[GA-CLI-USAGE\]: gpualert up: receiver "chat" \(slack\): settings\.url \(from MY_SLACK\): /,
    );
    expect(result.stdout + result.stderr).not.toContain('XSECRETX');
  });
});
