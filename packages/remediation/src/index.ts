export { actionAlerts } from './action-alerts.ts';
export { loadPolicy, parsePolicy } from './load-policy.ts';
export { kubernetesNodeNameProblem, nodeNameProblem, quoteName } from './node-name.ts';
export { MAX_APPROVAL_TIMEOUT_MS, type Policy } from './policy-file.ts';
export { RemediationCore, type ActionCommand, type CoreOutput, type ExecutionOutcome } from './remediation-core.ts';
export { awaitsApproval, foldActions, MAX_ACTION_VIEWS, newestFirst, type ActionView } from './action-views.ts';
