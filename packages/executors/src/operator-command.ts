import { quoteName, type ActionCommand, type ExecutionOutcome } from '@gpualert/remediation';
import { lastLine, runFile } from './run-file.ts';

/** The operator's programs for a GPU reset and a reboot, each as a list: the program, then its first arguments. */
export interface OperatorCommands {
  readonly 'reset-gpu'?: readonly string[];
  readonly reboot?: readonly string[];
}

/**
 * `reset-gpu` and `reboot` are requests to a program the operator configures (a BMC tool, an
 * ssh wrapper, a ticket): it is run with the host, then the GPU index where there is one, as its
 * last arguments, with no shell. Exit 0 is success; 75 (EX_TEMPFAIL) asks to be tried again.
 */
export async function operatorCommand(commands: OperatorCommands | undefined, command: ActionCommand, timeoutMs: number): Promise<ExecutionOutcome> {
  const argv = command.kind === 'reset-gpu' || command.kind === 'reboot' ? commands?.[command.kind] : undefined;
  const [program, ...first] = argv ?? [];
  if (program === undefined) return { outcome: 'failed', retriable: false, error: `no command is configured for ${command.kind}` };
  const args = [...first, command.host, ...(command.kind === 'reset-gpu' && command.gpu !== undefined ? [String(command.gpu)] : [])];
  const run = await runFile(program, args, { timeoutMs });
  if (run.ok) return { outcome: 'succeeded' };
  return { outcome: 'failed', retriable: run.failure !== 'exit' || run.code === 75, error: `${program}: ${lastLine(run)}` };
}

/** A scheduler's own two actions; the rest every executor does alike. */
interface SchedulerActions {
  drain(host: string, reason: string): Promise<ExecutionOutcome>;
  resume(host: string): Promise<ExecutionOutcome>;
}

/**
 * One action on one node, as every executor runs it: a node name the scheduler would misread
 * (`problem`, from its own check) refused before anything runs; drain and resume by the
 * scheduler; reset and reboot by the operator's programs; notify-only nothing.
 */
export function runAction(
  command: ActionCommand,
  problem: string | undefined,
  scheduler: SchedulerActions,
  commands: OperatorCommands | undefined,
  timeoutMs: number,
): Promise<ExecutionOutcome> {
  if (problem !== undefined) return Promise.resolve({ outcome: 'failed', retriable: false, error: `node ${quoteName(command.host)} refused: ${problem}` });
  switch (command.kind) {
    case 'drain':
      return scheduler.drain(command.host, command.reason);
    case 'resume':
      return scheduler.resume(command.host);
    case 'reset-gpu':
    case 'reboot':
      return operatorCommand(commands, command, timeoutMs);
    case 'notify-only':
      return Promise.resolve({ outcome: 'succeeded' });
  }
}
