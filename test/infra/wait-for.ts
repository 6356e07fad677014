// The cross-service tests' waits are the conformance suites' own (packages/test-support).
export { uniqueName, waitFor } from '@gpualert/test-support';
