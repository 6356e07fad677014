import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Readable, Writable } from 'node:stream';
import { shiftClock } from './infra/clock-shift.mjs';

/**
 * Debian's Chromium, headless, driven over the DevTools protocol on a pipe (`--remote-debugging-pipe`:
 * JSON messages separated by NUL on file descriptors 3 and 4), so the tests and the bench need no
 * WebSocket client and no browser-automation package. Bounded: every call has a deadline.
 */
export function chromiumPath(): string {
  const which = spawnSync('sh', ['-c', 'command -v chromium || command -v chromium-browser'], { encoding: 'utf8' });
  const path = which.stdout.trim();
  if (!path) throw new Error("Debian's chromium is not installed (.ci/run installs it: apt-get install chromium)");
  return path;
}

interface Pending {
  resolve: (v: unknown) => void;
  reject: (e: Error) => void;
  timer: NodeJS.Timeout;
}

export class Browser {
  private next = 1;
  private readonly pending = new Map<number, Pending>();
  private readonly listeners = new Set<(message: { method?: string; params?: Record<string, unknown>; sessionId?: string }) => void>();
  private buffer = '';

  private constructor(
    private readonly child: ChildProcess,
    private readonly profile: string,
  ) {
    const out = child.stdio[4] as Readable;
    out.on('data', (chunk: Buffer) => {
      this.buffer += chunk.toString('utf8');
      for (let end = this.buffer.indexOf('\0'); end >= 0; end = this.buffer.indexOf('\0')) {
        const message = JSON.parse(this.buffer.slice(0, end)) as {
          id?: number;
          result?: unknown;
          error?: { message: string };
          method?: string;
          params?: Record<string, unknown>;
          sessionId?: string;
        };
        this.buffer = this.buffer.slice(end + 1);
        if (message.id !== undefined) {
          const p = this.pending.get(message.id);
          if (!p) continue;
          this.pending.delete(message.id);
          clearTimeout(p.timer);
          if (message.error) p.reject(new Error(message.error.message));
          else p.resolve(message.result);
        } else {
          for (const listener of this.listeners) listener(message);
        }
      }
    });
  }

  static async launch(width = 1280, height = 900): Promise<Browser> {
    const profile = mkdtempSync(join(tmpdir(), 'gpualert-chromium-'));
    const args = [
      '--headless',
      '--no-sandbox',
      '--disable-gpu',
      '--hide-scrollbars',
      '--no-first-run',
      '--no-default-browser-check',
      '--disable-extensions',
      '--remote-debugging-pipe',
      `--user-data-dir=${profile}`,
      `--window-size=${width},${height}`,
      'about:blank',
    ];
    const child = spawn(chromiumPath(), args, { stdio: ['ignore', 'ignore', 'ignore', 'pipe', 'pipe'] });
    const browser = new Browser(child, profile);
    await browser.send('Browser.getVersion', {}, undefined, 30_000);
    return browser;
  }

  send(method: string, params: Record<string, unknown> = {}, sessionId?: string, timeoutMs = 30_000): Promise<unknown> {
    const id = this.next++;
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        this.pending.delete(id);
        reject(new Error(`${method}: no answer from Chromium within ${timeoutMs} ms`));
      }, timeoutMs);
      this.pending.set(id, { resolve, reject, timer });
      (this.child.stdio[3] as Writable).write(`${JSON.stringify({ id, method, params, ...(sessionId ? { sessionId } : {}) })}\0`);
    });
  }

  on(listener: (message: { method?: string; params?: Record<string, unknown>; sessionId?: string }) => void): void {
    this.listeners.add(listener);
  }

  async newPage(width = 1280, height = 900): Promise<Page> {
    const { targetId } = (await this.send('Target.createTarget', { url: 'about:blank' })) as { targetId: string };
    const { sessionId } = (await this.send('Target.attachToTarget', { targetId, flatten: true })) as { sessionId: string };
    const page = new Page(this, sessionId);
    await page.send('Page.enable');
    await page.send('Runtime.enable');
    await page.send('Log.enable');
    await page.send('Emulation.setDeviceMetricsOverride', { width, height, deviceScaleFactor: 1, mobile: false });
    // Under the clock-ahead run the page reads the same shifted clock as the servers it talks to.
    // (set only in that run, by the preload that shifted this process: test/infra/clock-ahead.mjs)
    const offset = Number(process.env.GPUALERT_CLOCK_OFFSET_MS ?? '0');
    if (Number.isSafeInteger(offset) && offset !== 0)
      await page.send('Page.addScriptToEvaluateOnNewDocument', { source: `(${shiftClock.toString()})(globalThis, ${offset});` });
    return page;
  }

  /** Files the pages download land in `folder` (headless Chromium refuses downloads otherwise). */
  async allowDownloads(folder: string): Promise<void> {
    await this.send('Browser.setDownloadBehavior', { behavior: 'allow', downloadPath: folder });
  }

  async close(): Promise<void> {
    await this.send('Browser.close', {}, undefined, 5_000).catch(() => undefined);
    if (this.child.exitCode === null) {
      await new Promise<void>((resolve) => {
        const timer = setTimeout(() => {
          this.child.kill('SIGKILL');
          resolve();
        }, 5_000);
        this.child.once('exit', () => {
          clearTimeout(timer);
          resolve();
        });
      });
    }
    rmSync(this.profile, { recursive: true, force: true });
  }
}

export class Page {
  /** Uncaught exceptions, console errors and CSP refusals the page reported. */
  readonly errors: string[] = [];

  constructor(
    private readonly browser: Browser,
    private readonly sessionId: string,
  ) {
    browser.on((m) => {
      if (m.sessionId !== sessionId) return;
      if (m.method === 'Runtime.exceptionThrown') this.errors.push(JSON.stringify((m.params as { exceptionDetails: unknown }).exceptionDetails).slice(0, 500));
      if (m.method === 'Log.entryAdded') {
        const entry = (m.params as { entry: { level: string; text: string } }).entry;
        if (entry.level === 'error') this.errors.push(entry.text);
      }
      if (m.method === 'Runtime.consoleAPICalled' && (m.params as { type: string }).type === 'error') this.errors.push(JSON.stringify(m.params).slice(0, 500));
    });
  }

  send(method: string, params: Record<string, unknown> = {}, timeoutMs = 30_000): Promise<unknown> {
    return this.browser.send(method, params, this.sessionId, timeoutMs);
  }

  async goto(url: string): Promise<void> {
    await this.send('Page.navigate', { url });
  }

  /** An expression's value in the page (promises awaited); a thrown error comes back as one. */
  async evaluate<T>(expression: string): Promise<T> {
    const r = (await this.send('Runtime.evaluate', { expression, awaitPromise: true, returnByValue: true })) as {
      result: { value?: unknown };
      exceptionDetails?: { text: string; exception?: { description?: string } };
    };
    if (r.exceptionDetails) throw new Error(`in the page: ${r.exceptionDetails.exception?.description ?? r.exceptionDetails.text}`);
    return r.result.value as T;
  }

  /** Polls an expression until it is truthy; throws naming what it waited for at the deadline. */
  async waitFor<T>(expression: string, what: string, timeoutMs = 20_000): Promise<T> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const value = await this.evaluate<T>(expression).catch(() => undefined);
      if (value) return value;
      if (Date.now() > deadline) throw new Error(`waited ${timeoutMs} ms for ${what}; page errors: ${this.errors.join(' | ') || 'none'}`);
      await new Promise((r) => setTimeout(r, 50));
    }
  }

  /** A PNG of the whole page (up to `maxHeight` pixels tall), written to `file`. */
  async screenshot(file: string, maxHeight = 4_000): Promise<void> {
    const { contentSize } = (await this.send('Page.getLayoutMetrics')) as { contentSize: { width: number; height: number } };
    const clip = { x: 0, y: 0, width: Math.ceil(contentSize.width), height: Math.min(Math.ceil(contentSize.height), maxHeight), scale: 1 };
    const { data } = (await this.send('Page.captureScreenshot', { format: 'png', clip, captureBeyondViewport: true }, 60_000)) as { data: string };
    writeFileSync(file, Buffer.from(data, 'base64'));
  }
}
