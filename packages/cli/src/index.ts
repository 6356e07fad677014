export { main, buildProgram } from './main.ts';
export { CliError, EXIT } from './cli-error.ts';
