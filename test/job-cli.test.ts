import { appendFileSync, mkdtempSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { MemoryBus } from '@gpualert/bus';
import { KafkaBus } from '@gpualert/bus/kafka';
import { CommandJobSource, FileLineSource, loadJobPatterns, startJobCollector } from '@gpualert/collectors';
import { createIntakeServer } from '@gpualert/intake';
import { createLogger } from '@gpualert/log';
import { ALL_TOPICS, parseEnvelope, TOPICS, type EnvelopeOf } from '@gpualert/schema';
import { MemoryStore } from '@gpualert/state';
import { afterEach, describe, expect, inject, it } from 'vitest';
import { close, listen } from './infra/http.ts';
import { cleanEnv, runCli } from './infra/run-cli.ts';
import { uniqueName, waitFor } from './infra/wait-for.ts';

const FIXTURES = new URL('./fixtures/jobs/', import.meta.url).pathname;
const log = createLogger({ name: 'test', level: 'silent' });
const patterns = (() => {
  const loaded = loadJobPatterns();
  if (!loaded.ok) throw new Error('patterns');
  return loaded.value;
})();
const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0)) await c();
});

const jobEvents = (values: readonly { value: Buffer }[]) =>
  values.map((m) => {
    const parsed = parseEnvelope(m.value);
    if (!parsed.ok) throw new Error(parsed.error.message);
    return parsed.value as EnvelopeOf<'job.event'>;
  });

describe('gpualert parse job', () => {
  it("prints a real log's job events as job.event envelopes, the job and host as given", async () => {
    const result = await runCli(['parse', 'job', `${FIXTURES}basicsr-737-watchdog-torch2.log`, '--job', '4242', '--host', 'gpu-node-07']);
    expect(result.code).toBe(0);
    expect(result.stderr).toBe('5 lines: 5 job events\n');
    const events = jobEvents(
      result.stdout
        .trim()
        .split('\n')
        .map((l) => ({ value: Buffer.from(l) })),
    );
    expect(events.map((e) => [e.host, e.data.job, e.data.kind, e.data.rank])).toEqual([
      ['gpu-node-07', '4242', 'collective_timeout', 1],
      ['gpu-node-07', '4242', 'collective_timeout', 1],
      ['gpu-node-07', '4242', 'collective_timeout', 0],
      ['gpu-node-07', '4242', 'collective_timeout', 0],
      ['gpu-node-07', '4242', 'collective_timeout', 2],
    ]);
  });

  it('a patterns file with a regex RE2 refuses stops with its file and line (exit 2)', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'job-patterns-'));
    writeFileSync(join(dir, 'p.yaml'), "patterns:\n  - name: x\n    kind: oom\n    contains: x\n    regex: '(a)\\1'\n");
    const result = await runCli(['parse', 'job', `${FIXTURES}pytorch-16417-oom.log`, '--patterns', join(dir, 'p.yaml')]);
    expect(result.code).toBe(2);
    expect(result.stderr).toMatch(/p\.yaml:5: patterns\.0\.regex: not an RE2 regex/);
  });
});

describe('gpualert job report', () => {
  it('posts a checkpoint to the intake with the token from the environment; without a token it says what to set', async () => {
    const bus = new MemoryBus();
    const token = 'job-report-token-0123456789abcdef';
    const { server } = createIntakeServer({
      bus,
      store: new MemoryStore(),
      log,
      now: Date.now,
      seenTtlMs: 60_000,
      publishTimeoutMs: 2_000,
      maxBodyBytes: 64 * 1024,
      auth: { secrets: [], token, tokenHeader: 'authorization' },
    });
    const url = await listen(server);
    cleanups.push(() => close(server));
    const args = ['job', 'report', '--job', '4242', '--rank', '3', '--step', '41000', '--checkpoint', 'ok', '--host', 'gpu-node-07'];
    const ok = await runCli(args, { env: cleanEnv({ GPUALERT_INTAKE_URL: url, GPUALERT_INTAKE_TOKEN: token }) });
    expect(ok.code).toBe(0);
    expect(jobEvents(await bus.read(TOPICS.jobEvents)).map((e) => [e.host, e.data])).toEqual([
      ['gpu-node-07', { job: '4242', kind: 'checkpoint', rank: 3, step: 41000, checkpoint: 'ok', message: '' }],
    ]);
    const wrong = await runCli(args, { env: cleanEnv({ GPUALERT_INTAKE_URL: url, GPUALERT_INTAKE_TOKEN: 'not-the-token-0123456789' }) });
    expect([wrong.code, wrong.stderr]).toEqual([1, expect.stringMatching(/the intake answered 401/)]);
    expect(wrong.stderr).not.toContain('not-the-token');
    const none = await runCli(args, { env: cleanEnv({ GPUALERT_INTAKE_URL: url }) });
    expect([none.code, none.stderr]).toEqual([2, expect.stringMatching(/set GPUALERT_INTAKE_TOKEN/)]);
  });

  it('an intake that is not there: says what failed where, with the retriable code and exit 75; credentials in the URL are refused (exit 2) and never echoed', async () => {
    // A port that was just listening and is closed now: connection refused.
    const gone = createServer();
    const url = await listen(gone);
    await close(gone);
    const args = ['job', 'report', '--job', 'j', '--step', '1'];
    const token = 'tok-0123456789abcdef0123';
    const away = await runCli(args, { env: cleanEnv({ GPUALERT_INTAKE_URL: url, GPUALERT_INTAKE_TOKEN: token }) });
    expect(away.code).toBe(75);
    expect(away.stderr).toMatch(
      new RegExp(
        `^error\\[GA-INFRA-UNAVAILABLE\\]: gpualert job report: cannot reach the intake at ${url.replace(/\/$/, '').replace(/[.]/g, '\\.')}: ECONNREFUSED`,
        'm',
      ),
    );
    expect(away.stderr).not.toContain(token);
    const secret = 'S3cretIntakePw';
    const withCreds = await runCli(args, {
      env: cleanEnv({ GPUALERT_INTAKE_URL: url.replace('http://', `http://ops:${secret}@`), GPUALERT_INTAKE_TOKEN: token }),
    });
    expect(withCreds.code).toBe(2);
    expect(withCreds.stderr).toMatch(/^error\[GA-CLI-USAGE\]: gpualert job report: GPUALERT_INTAKE_URL carries a user name or password/m);
    expect(withCreds.stderr).not.toContain(secret);
    const bad = await runCli(args, { env: cleanEnv({ GPUALERT_INTAKE_URL: `http://ops:${secret}@[::1`, GPUALERT_INTAKE_TOKEN: token }) });
    expect(bad.code).toBe(2);
    expect(bad.stderr).toMatch(/GPUALERT_INTAKE_URL is not a URL/);
    expect(bad.stderr).not.toContain(secret);
  });
});

describe('the job collector', () => {
  it('follows a log from its end: old lines are history, new failures publish at once, progress once per interval (the newest)', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'job-log-'));
    const file = join(dir, 'train.log');
    const old = 'torch.cuda.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB\n';
    writeFileSync(file, old);
    const bus = new MemoryBus();
    const collector = startJobCollector({
      bus,
      source: new FileLineSource(file),
      from: Buffer.byteLength(old),
      host: 'gpu-node-07',
      patterns,
      context: { job: 'run-7', rank: 2 },
      stepIntervalMs: 60_000,
      pollMs: 20,
      log,
    });
    cleanups.push(() => collector.stop());
    const megatron = (n: number) =>
      ` iteration      ${n}/  250000 | consumed samples:       124928 | elapsed time per iteration (ms): 86545.2 | learning rate: 9.150E-06 | global batch size:  1024 | lm loss: 2.504220E+00 |\n`;
    appendFileSync(file, megatron(122));
    await waitFor(async () => (await bus.read(TOPICS.jobEvents)).length >= 1, 'the first step');
    appendFileSync(
      file,
      megatron(123) +
        megatron(124) +
        '[rank2]:[E626 06:24:44.903881913 ProcessGroupNCCL.cpp:616] [Rank 2] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=808, OpType=ALLREDUCE, NumelIn=9801523, NumelOut=9801523, Timeout(ms)=600000) ran for 600020 milliseconds before timing out.\n',
    );
    await waitFor(async () => (await bus.read(TOPICS.jobEvents)).length >= 2, 'the timeout');
    await collector.stop();
    cleanups.length = 0;
    const events = jobEvents(await bus.read(TOPICS.jobEvents));
    expect(events.map((e) => [e.data.kind, e.data.step, e.data.rank])).toEqual([
      ['step', 122, 2],
      ['collective_timeout', undefined, 2],
      ['step', 124, 2],
    ]);
    expect(events.every((e) => e.host === 'gpu-node-07' && e.source === 'collector-job/0.1.0')).toBe(true);
  });

  it("--command on the real Kafka: the output passes through, events are published, and it exits with the command's status", async () => {
    const prefix = `${uniqueName('job')}.`;
    const bus = new KafkaBus({ brokers: inject('kafkaBrokers').split(','), topicPrefix: prefix, publishTimeoutMs: 10_000 });
    cleanups.push(() => bus.close());
    await bus.ensureTopics(ALL_TOPICS);
    const command = "echo 'torch.cuda.OutOfMemoryError: CUDA out of memory. Tried to allocate 22.00 MiB. GPU 0 has a total capacity of 23.65 GiB'; exit 3";
    const result = await runCli(['collect', 'job', '--job', 'j-9', '--rank', '1', '--host', 'gpu-node-09', '--command', command], {
      env: cleanEnv({ KAFKA_BROKERS: inject('kafkaBrokers'), GPUALERT_TOPIC_PREFIX: prefix, GPUALERT_LOG_LEVEL: 'silent' }),
    });
    expect(result.code).toBe(3);
    expect(result.stdout).toContain('CUDA out of memory');
    await waitFor(async () => (await bus.read(TOPICS.jobEvents)).length >= 2, 'the oom and the exit');
    expect(jobEvents(await bus.read(TOPICS.jobEvents)).map((e) => [e.host, e.data.kind, e.data.gpu, e.data.exit_code])).toEqual([
      ['gpu-node-09', 'oom', 0, undefined],
      ['gpu-node-09', 'exit', undefined, 3],
    ]);
  }, 60_000);

  it('a command source reads stdout and stderr and counts what it had to drop', async () => {
    const source = new CommandJobSource("echo out; echo 'NCCL error in: x.cpp:1, unhandled system error' >&2", undefined);
    source.open();
    // `exited` is the child's 'close': both pipes have ended and every line is read by then.
    expect(await source.exited).toBe(0);
    expect((await source.read()).map((l) => l.text).sort()).toEqual(['NCCL error in: x.cpp:1, unhandled system error', 'out']);
    expect(source.dropped).toBe(0);
  });
});
