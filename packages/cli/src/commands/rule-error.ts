import { formatRuleError, type RuleFileError } from '@gpualert/rules';

/**
 * The first of a failed load's problems as one line, with its file and line. A file of its own, so
 * the agent and the collectors reach it without load-files.ts, which brings the engine, the
 * notifier's routes and the usage prices with it (the agent's executable leaves those out).
 */
export function firstRuleError(errors: readonly RuleFileError[]): string {
  const [first] = errors;
  return first ? formatRuleError(first) : 'the file does not load';
}
