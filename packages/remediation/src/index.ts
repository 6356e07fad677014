export { alertFacts } from './alert-facts.ts';
export { breakerLimit, judgeBreaker } from './breaker.ts';
export { DEFAULT_POLICY, loadPolicy, parsePolicy } from './load-policy.ts';
export { nodeNameProblem, quoteName } from './node-name.ts';
export { NOTIFY_ONLY, type Policy, type PolicyRule } from './policy-file.ts';
export { RemediationCore, type ActionCommand, type ActionRecord, type CoreOutput, type Evidence, type ExecutionOutcome } from './remediation-core.ts';
