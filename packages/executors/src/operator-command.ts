import type { ActionCommand, ExecutionOutcome } from '@gpualert/remediation';
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
