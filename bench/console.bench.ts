import { createNotifierServer, NotifierMetrics } from '@gpualert/notifier';
import { gridOf } from '../services/notifier/src/console/console-http.ts';
import { MemoryStore } from '@gpualert/state';
import { syntheticFleetSnapshot, syntheticFleetSource } from '@gpualert/test-support';
import { Browser } from '../test/console-browser.ts';
import { close, listen } from '../test/infra/http.ts';
import { format, median } from './harness.ts';

const TOKEN = 'bench-console-token-0123';

/**
 * The console's fleet page for 1,000 hosts × 8 GPUs (a synthetic fleet) in Debian's headless
 * Chromium: from the navigation's start to the grid painted (the page's own mark, set after the
 * frame that shows it), fetch and JSON included. Each load is a fresh navigation; the first warms
 * the browser and the server and is not counted. GPUALERT_BENCH_CONSOLE_HOSTS changes the fleet.
 */
export async function benchConsole(): Promise<void> {
  const hosts = Number(process.env.GPUALERT_BENCH_CONSOLE_HOSTS ?? 1_000);
  const runs = 7;
  console.log(`\n## Console: the fleet page for ${hosts.toLocaleString('en-US')} hosts × 8 GPUs in headless Chromium`);
  const bytes = JSON.stringify(gridOf(syntheticFleetSnapshot(hosts, 8, Date.now()))).length;
  const server = createNotifierServer(new MemoryStore(), new NotifierMetrics(), TOKEN, undefined, {}, undefined, undefined, syntheticFleetSource(hosts, 8));
  const base = await listen(server);
  const browser = await Browser.launch();
  try {
    const page = await browser.newPage();
    await page.goto(`${base}/console/`);
    await page.waitFor('document.getElementById("token-form") !== null', 'the page');
    await page.evaluate(`sessionStorage.setItem('gpualert.notifierToken', ${JSON.stringify(TOKEN)}); true`);
    const times: number[] = [];
    for (let i = 0; i <= runs; i += 1) {
      await page.goto(`${base}/console/?load=${i}#/fleet`);
      const drawnMs = await page.waitFor<string>(`document.body.dataset.view === 'fleet' && document.body.dataset.drawnMs`, 'the grid painted', 30_000);
      const cells = await page.evaluate<number>('document.querySelectorAll("a.gpu").length');
      if (cells !== hosts * 8) throw new Error(`the grid has ${cells} GPUs, not ${hosts * 8}`);
      if (i > 0) times.push(Number(drawnMs));
    }
    console.log(
      `${'fleet page: navigation start → grid painted'.padEnd(58)} ${format(median(times)).padStart(12)} ms  (median of ${runs}; min ${format(Math.min(...times))}, max ${format(Math.max(...times))}; the grid's JSON ${(bytes / 1024).toFixed(0)} KiB)`,
    );
    if (page.errors.length > 0) console.log(`page errors: ${page.errors.join(' | ')}`);
  } finally {
    await browser.close();
    await close(server);
  }
}
