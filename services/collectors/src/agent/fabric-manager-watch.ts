import { repeat } from '../repeat.ts';
import { runCommand } from '../run-command.ts';
import type { SourceWatch } from './telemetry-watch.ts';

export interface FabricManagerOptions {
  /** The systemctl to ask (a test gives its own). */
  readonly systemctl: string;
  /** `nvidia-fabricmanager.service`, as NVIDIA's packages install it. */
  readonly unit: string;
  readonly intervalMs: number;
  readonly timeoutMs: number;
}

/** Where NVSwitch systems have Fabric Manager: the device node the NVSwitch driver makes. */
export const NVSWITCH_DEVICE = '/dev/nvidia-nvswitchctl';
/** Present where systemd is the init system (sd_booted's test): only there is its unit state asked. */
export const SYSTEMD_RUNTIME = '/run/systemd/system';
/** Checks in a row that must say "not active" before Fabric Manager is down: one `activating` (a restart) is not. */
export const FABRIC_MANAGER_DOWN_CHECKS = 2;
export const FABRIC_MANAGER_DEFAULTS: FabricManagerOptions = {
  systemctl: 'systemctl',
  unit: 'nvidia-fabricmanager.service',
  intervalMs: 30_000,
  timeoutMs: 10_000,
};

/**
 * Fabric Manager on an NVSwitch system, by its systemd unit's state (`systemctl is-active`): the
 * same answer an operator reads, and one a test can give. Not `active` (inactive, failed,
 * activating: a restart loop) twice in a row is `down` (one `activating`, a restart, is not);
 * systemctl not answering within its timeout is `stalled`. Asked every `intervalMs`: down is known
 * within `2 × intervalMs + timeoutMs`.
 */
export function startFabricManagerWatch(options: FabricManagerOptions, now: () => number = Date.now): SourceWatch & { stop(): Promise<void> } {
  const started = now();
  let result: { state: 'ok' | 'down' | 'stalled' | 'stopped'; message?: string; at: number } | undefined;
  let fresh: number | undefined;
  let notActive = 0;
  const loop = repeat(
    async () => {
      const ran = await runCommand(options.systemctl, ['is-active', options.unit], options.timeoutMs, 64 * 1024);
      const at = now();
      const said = ran.stdout.trim().split('\n')[0]?.trim() ?? '';
      if (ran.timedOut)
        result = { state: 'stalled', message: `systemctl is-active ${options.unit} did not answer within ${Math.round(options.timeoutMs / 1000)} s`, at };
      else if (ran.spawnError) result = { state: 'stopped', message: `cannot run ${options.systemctl}: ${ran.spawnError}`, at };
      else if (said === 'active') {
        result = { state: 'ok', at };
        fresh = at;
        notActive = 0;
      } else if (++notActive >= FABRIC_MANAGER_DOWN_CHECKS)
        result = { state: 'down', message: `${options.unit} is ${said === '' ? `not active (exit ${String(ran.exitCode)})` : said.slice(0, 64)}`, at };
    },
    (elapsed) => options.intervalMs - elapsed,
  );
  return {
    source: 'fabric-manager',
    check(at) {
      const quietMs = at - (fresh ?? started);
      if (!result) return { state: 'ok', quietMs };
      return { state: result.state, quietMs, ...(result.message ? { message: result.message } : {}) };
    },
    stop: () => loop.stop(),
  };
}
