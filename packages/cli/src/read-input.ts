import { readFile } from 'node:fs/promises';
import { CliError, errnoCode } from './cli-error.ts';

/** A file's text, or standard input for `-`; a missing file is one clear line and exit 2. */
export async function readInput(command: string, file: string): Promise<string> {
  if (file === '-') {
    const chunks: Buffer[] = [];
    for await (const chunk of process.stdin) chunks.push(chunk as Buffer);
    return Buffer.concat(chunks).toString('utf8');
  }
  try {
    return await readFile(file, 'utf8');
  } catch (error) {
    throw new CliError(`gpualert ${command}: cannot read ${file}: ${errnoCode(error) ?? String(error)}`);
  }
}
