#!/usr/bin/env node
// The gpualert command line. TypeScript runs directly through tsx's loader: no build step.
import { register } from 'tsx/esm/api';

register();
const { main } = await import('../packages/cli/src/main.ts');
process.exitCode = await main(process.argv);
