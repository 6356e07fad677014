import { nodeNameProblem, type ActionCommand, type ExecutionOutcome } from '@gpualert/remediation';
import type { Executor, SchedulerInventory } from './executor.ts';
import { runAction, type OperatorCommands } from './operator-command.ts';
import { lastLine, runFile, type FileRun } from './run-file.ts';

export interface SlurmExecutorOptions {
  /** `scontrol` and `sinfo` (default: found on PATH). */
  readonly scontrol?: string;
  readonly sinfo?: string;
  /** The whole environment of every run (default: this process's); a test's unpacked Slurm needs `SLURM_CONF` and `LD_LIBRARY_PATH`. */
  readonly env?: NodeJS.ProcessEnv;
  /** Per run (default 10 s). */
  readonly timeoutMs?: number;
  /** The operator's programs for `reset-gpu` and `reboot`. */
  readonly commands?: OperatorCommands;
}

/** The marker gpualert's reasons begin with: a resume lifts only a drain gpualert set. */
export const REASON_MARKER = 'gpualert';
/** Slurm keeps a reason of any length; a short one shows whole in `sinfo -R`. */
const MAX_REASON_LENGTH = 256;
/** Nodes read from sinfo at most. */
export const MAX_SLURM_NODES = 100_000;

/** What Slurm says that no retry will change: the node does not exist, the request is wrong. */
const PERMANENT = /Invalid node name|not found|Invalid node state|Invalid argument|Access\/permission denied|Invalid user/i;

interface NodeState {
  readonly states: ReadonlySet<string>;
  readonly reason: string;
}

/**
 * Slurm through its own commands: `scontrol update NodeName=N State=DRAIN Reason=…` and
 * `State=RESUME`, each checked first with `scontrol show node -o N` so a drain that holds is not
 * repeated and a resume never lifts a drain someone else set. Every program runs with its
 * arguments as a list (execFile, no shell) and a deadline; a node name Slurm would read as an
 * option, a list or `ALL` is refused before any run.
 */
export class SlurmExecutor implements Executor {
  readonly name = 'slurm';
  private readonly timeoutMs: number;

  constructor(private readonly options: SlurmExecutorOptions = {}) {
    this.timeoutMs = options.timeoutMs ?? 10_000;
  }

  run(command: ActionCommand): Promise<ExecutionOutcome> {
    return runAction(
      command,
      nodeNameProblem(command.host),
      { drain: (host, reason) => this.drain(host, reason), resume: (host) => this.resume(host) },
      this.options.commands,
      this.timeoutMs,
    );
  }

  async inventory(): Promise<SchedulerInventory> {
    const run = await this.sinfo(['--noheader', '--Node', '--format=%N|%P']);
    if (!run.ok) throw new Error(`sinfo failed: ${lastLine(run)}`);
    // One line per (node, partition): a node in several partitions is listed in each.
    const hostPartitions = new Map<string, string[]>();
    const partitions = new Map<string, number>();
    const lines = run.stdout.split('\n', MAX_SLURM_NODES * 4);
    for (const line of lines) {
      const [node, partition] = line.trim().split('|');
      if (!node || !partition) continue;
      const name = partition.replace(/\*$/, ''); // the default partition is starred
      const known = hostPartitions.get(node);
      if (known === undefined) {
        if (hostPartitions.size >= MAX_SLURM_NODES) continue;
        hostPartitions.set(node, [name]);
      } else if (known.includes(name)) continue;
      else known.push(name);
      partitions.set(name, (partitions.get(name) ?? 0) + 1);
    }
    return { partitions, hostPartitions };
  }

  private async drain(node: string, reason: string): Promise<ExecutionOutcome> {
    const state = await this.nodeState(node);
    if ('outcome' in state) return state;
    if (state.states.has('DRAIN')) return { outcome: 'already_held' };
    const text = cleanReason(reason);
    return this.update([`NodeName=${node}`, 'State=DRAIN', `Reason=${text}`]);
  }

  private async resume(node: string): Promise<ExecutionOutcome> {
    const state = await this.nodeState(node);
    if ('outcome' in state) return state;
    if (!state.states.has('DRAIN')) return { outcome: 'already_held' };
    if (!state.reason.startsWith(REASON_MARKER))
      return {
        outcome: 'failed',
        retriable: false,
        error: `${node} is drained by someone else (reason ${JSON.stringify(state.reason.slice(0, 120))}): left as it is`,
      };
    return this.update([`NodeName=${node}`, 'State=RESUME']);
  }

  private async nodeState(node: string): Promise<NodeState | ExecutionOutcome> {
    const run = await this.scontrol(['--oneliner', 'show', 'node', node]);
    if (!run.ok) return failure(run);
    const line = run.stdout.split('\n').find((l) => l.startsWith(`NodeName=${node} `));
    if (!line) return { outcome: 'failed', retriable: false, error: `scontrol show node ${node}: no such node in its answer` };
    const state = /(?:^| )State=(\S+)/.exec(line)?.[1] ?? '';
    const reason = /(?:^| )Reason=(.*)$/.exec(line)?.[1] ?? '';
    return { states: new Set(state.split('+').map((s) => s.replace(/\*$/, '').toUpperCase())), reason };
  }

  private async update(args: readonly string[]): Promise<ExecutionOutcome> {
    const run = await this.scontrol(['update', ...args]);
    return run.ok ? { outcome: 'succeeded' } : failure(run);
  }

  private scontrol(args: readonly string[]): Promise<FileRun> {
    return runFile(this.options.scontrol ?? 'scontrol', args, this.runOptions());
  }

  private sinfo(args: readonly string[]): Promise<FileRun> {
    return runFile(this.options.sinfo ?? 'sinfo', args, this.runOptions());
  }

  private runOptions() {
    return { timeoutMs: this.timeoutMs, ...(this.options.env ? { env: this.options.env } : {}) };
  }
}

/** A failed run: retriable unless Slurm said something no retry changes (the controller down, a timeout, a missing program: retried). */
function failure(run: FileRun): ExecutionOutcome {
  const error = lastLine(run);
  return { outcome: 'failed', retriable: run.failure !== 'exit' || !PERMANENT.test(`${run.stderr}\n${run.stdout}`), error };
}

/** A reason as one line Slurm keeps whole: gpualert's marker first, no control characters, bounded. */
export function cleanReason(reason: string): string {
  const line = reason.replace(/[\u0000-\u001f\u007f]+/g, ' ').trim();
  const marked = line.startsWith(REASON_MARKER) ? line : `${REASON_MARKER}: ${line}`;
  return marked.slice(0, MAX_REASON_LENGTH);
}
