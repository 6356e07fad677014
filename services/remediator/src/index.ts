export { REMEDIATOR_SOURCE, startRemediator } from './remediator-service.ts';
