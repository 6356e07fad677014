import { spawn, type ChildProcess } from 'node:child_process';
import { createRequire } from 'node:module';
import { mkdtempSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { onFreePort, PORT_TAKEN, PortTaken } from './free-port.ts';

/** A real SMTP server process (smtp-server) that writes every message it receives to a folder. */
export class SmtpSink {
  readonly dir = mkdtempSync(join(tmpdir(), 'gpualert-smtp-'));
  private child: ChildProcess | undefined;
  port = 0;

  /** Starts the server; on a new port when another process took the one freePort() found first. */
  async start(): Promise<void> {
    await onFreePort((port) => this.startOn(port));
  }

  private async startOn(port: number): Promise<void> {
    this.port = port;
    const script = join(this.dir, 'server.cjs');
    writeFileSync(
      script,
      `
const { SMTPServer } = require(${JSON.stringify(createRequire(import.meta.url).resolve('smtp-server'))});
const fs = require('fs');
let n = 0;
const server = new SMTPServer({
  authOptional: true, disabledCommands: ['STARTTLS'],
  onData(stream, session, done) {
    const chunks = [];
    stream.on('data', (c) => chunks.push(c));
    stream.on('end', () => { fs.writeFileSync(${JSON.stringify(this.dir)} + '/mail-' + (++n) + '.eml', Buffer.concat(chunks)); done(); });
  },
});
server.listen(${port}, '127.0.0.1', () => process.stdout.write('listening\\n'));
`,
    );
    const child = spawn(process.execPath, [script], { stdio: ['ignore', 'pipe', 'pipe'] });
    this.child = child;
    let said = '';
    child.stderr!.on('data', (chunk: Buffer) => {
      said += chunk.toString();
      process.stderr.write(chunk);
    });
    await new Promise<void>((resolve, reject) => {
      child.stdout!.once('data', () => resolve());
      child.once('close', (code) => reject(PORT_TAKEN.test(said) ? new PortTaken(port, said) : new Error(`smtp sink exited with ${code}`)));
    });
  }

  mails(): string[] {
    return readdirSync(this.dir)
      .filter((f) => f.endsWith('.eml'))
      .sort()
      .map((f) => readFileSync(join(this.dir, f), 'utf8'));
  }

  async stop(): Promise<void> {
    const child = this.child;
    if (!child || child.exitCode !== null) return;
    const exited = new Promise((r) => child.once('exit', r));
    child.kill('SIGTERM');
    await exited;
  }
}
