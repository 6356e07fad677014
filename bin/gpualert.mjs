#!/usr/bin/env node
// The gpualert command line. TypeScript runs directly through tsx's loader: no build step.
import { register } from 'tsx/esm/api';

// `gpualert parse … | head` closes the pipe early: that is the reader's choice, not an error.
process.stdout.on('error', (error) => {
  if (error.code === 'EPIPE') process.exit(0);
  throw error;
});

register();
const { main } = await import('../packages/cli/src/main.ts');
process.exitCode = await main(process.argv);
