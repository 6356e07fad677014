#!/usr/bin/env node
// The gpualert command line. In a checkout it runs the TypeScript directly through tsx (no build
// step); an installed package runs the bundle `npm run build` made (dist/gpualert.mjs).
import { existsSync } from 'node:fs';

const source = new URL('../packages/cli/src/bin.ts', import.meta.url);
if (existsSync(source) && process.env.GPUALERT_USE_DIST !== '1') {
  const { register } = await import('tsx/esm/api');
  register();
  await import(source.href);
} else {
  await import('../dist/gpualert.mjs');
}
