import type { BmcEventData, HostSampleData } from '@gpualert/schema';
import { runCommand } from '../run-command.ts';
import { parseSdr, parseSel } from './ipmitool-parse.ts';
import { RedfishClient, RedfishError, type RedfishClientOptions } from './redfish-client.ts';
import { DEFAULT_REDFISH_POLL_LIMITS, pollRedfish, type RedfishPollLimits } from './redfish-poll.ts';

/** One read of a BMC: the sample, every log entry it lists now, and what could not be read. */
export interface BmcReading {
  readonly sample: HostSampleData;
  readonly entries: readonly BmcEventData[];
  readonly problems: readonly string[];
  /** What left this poll less than whole in a way to warn about (a truncated SEL, the poll deadline, the request budget). */
  readonly incomplete?: readonly string[];
}

/** A BMC to read, by Redfish or ipmitool; `poll` throws when nothing could be read at all. */
export interface BmcSource {
  readonly origin: 'redfish' | 'ipmitool';
  /** Where it reads from, for logs (a URL without credentials, or the command). */
  readonly where: string;
  poll(): Promise<BmcReading>;
  close(): Promise<void>;
}

export function redfishSource(options: RedfishClientOptions, limits: RedfishPollLimits = DEFAULT_REDFISH_POLL_LIMITS): BmcSource {
  const client = new RedfishClient(options);
  return {
    origin: 'redfish',
    where: client.origin,
    async poll() {
      await client.open();
      return pollRedfish(client, limits);
    },
    close: () => client.close(),
  };
}

export interface IpmitoolOptions {
  /** The binary (default `ipmitool`). */
  readonly binary: string;
  /**
   * Arguments before `sdr elist` / `sel elist`: the interface and host (`-I lanplus -H bmc -U admin -E`).
   * A password belongs in IPMI_PASSWORD (`-E`) or a file (`-f`), never here: arguments show in `ps`.
   */
  readonly args: readonly string[];
  readonly timeoutMs: number;
  /** The most output read from one run; more fails that run. */
  readonly maxOutputBytes: number;
}

/** An output past this is not a BMC's: a full SEL of 4,096 records is about 400 KB. */
export const DEFAULT_IPMITOOL_MAX_OUTPUT_BYTES = 4 * 1024 * 1024;

async function ipmitool(options: IpmitoolOptions, what: readonly string[]): Promise<string> {
  const result = await runCommand(options.binary, [...options.args, ...what], options.timeoutMs, options.maxOutputBytes);
  const command = `${options.binary} … ${what.join(' ')}`;
  if (result.spawnError) throw new RedfishError('command_failed', `${command}: could not start (${result.spawnError})`);
  if (result.timedOut) throw new RedfishError('timeout', `${command}: no answer in ${options.timeoutMs} ms`);
  if (result.overflow) throw new RedfishError('unparseable', `${command}: output over ${options.maxOutputBytes} bytes`);
  if (result.exitCode !== 0) {
    throw new RedfishError('command_failed', `${command}: exit ${String(result.exitCode)}: ${result.stderr.trim().split('\n')[0]?.slice(0, 200) ?? ''}`);
  }
  return result.stdout;
}

/** ipmitool's options that take a value (its getopt string `I:46hVvcgsEKYao:H:d:P:f:U:p:C:L:A:t:T:m:z:S:l:b:B:e:k:y:O:R:N:D:Z`). */
const IPMITOOL_VALUED = new Set([...'IoHdPfUpCLAtTmzSlbBekyORND']);

/**
 * The first ipmitool argument that would put a secret on the command line, read as ipmitool's
 * getopt reads it: `-P` (password) or `-k`/`-y` (Kg key), alone, attached (`-PS3cret`, `-P=…`) or
 * after other flags (`-EPS3cret`), and `--password…`. Names the option, never the value.
 */
export function ipmitoolSecretOption(args: readonly string[]): { option: string; what: 'the password' | 'a key' } | undefined {
  let valueNext = false;
  for (const arg of args) {
    if (valueNext) {
      valueNext = false;
      continue;
    }
    if (arg.startsWith('--')) {
      if (/^--pass(word)?(=|$)/i.test(arg)) return { option: '--password', what: 'the password' };
      continue;
    }
    if (!arg.startsWith('-')) continue;
    for (let j = 1; j < arg.length; j++) {
      const flag = arg.charAt(j);
      if (flag === 'P') return { option: '-P', what: 'the password' };
      if (flag === 'k' || flag === 'y') return { option: `-${flag}`, what: 'a key' };
      if (IPMITOOL_VALUED.has(flag)) {
        // The rest of this word is the value, or the next word is.
        if (j === arg.length - 1) valueNext = true;
        break;
      }
    }
  }
  return undefined;
}

export function ipmitoolSource(options: IpmitoolOptions): BmcSource {
  const secret = ipmitoolSecretOption(options.args);
  if (secret) throw new RedfishError('command_failed', `ipmitool arguments: ${secret.option} puts ${secret.what} where \`ps\` shows it`);
  return {
    origin: 'ipmitool',
    where: options.binary,
    async poll() {
      // One after the other: a BMC answers one IPMI session at a time on many boards.
      const sdr = parseSdr(await ipmitool(options, ['sdr', 'elist']));
      const sel = parseSel(await ipmitool(options, ['sel', 'elist']));
      const problems = [...sdr.problems, ...sel.problems].map((p) => `line ${p.line}: ${p.reason}: ${p.text}`);
      return { sample: sdr.sample, entries: sel.entries, problems };
    },
    close: async () => {},
  };
}
