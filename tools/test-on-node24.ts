/**
 * The unit tests (packages/ and services/) again on Node 24: what users on a current Node run.
 * Part of `npm test`; `npm run test:node24` runs it alone.
 */
import { spawnSync } from 'node:child_process';
import { resolve } from 'node:path';
import { node24Binary } from './node24.ts';

const ROOT = resolve(import.meta.dirname, '..');
const node = node24Binary();
const version = spawnSync(node, ['--version'], { encoding: 'utf8' }).stdout.trim();
process.stderr.write(`[node24] unit tests on Node ${version} (${node})\n`);
const run = spawnSync(node, [resolve(ROOT, 'node_modules/vitest/vitest.mjs'), 'run', 'packages/', 'services/'], { cwd: ROOT, stdio: 'inherit' });
process.exit(run.status ?? 1);
