import { readFileSync, readdirSync } from 'node:fs';
import { loadJobPatterns } from '../services/collectors/src/job/job-patterns.ts';
import type { JobPattern } from '../services/collectors/src/job/job-patterns.ts';
import { matchJobLine, readJobLine, recogniseJobLine, redrawsOf } from '../services/collectors/src/job/match-job-line.ts';
import { measure } from './harness.ts';

/** Every line of the real job-log fixtures (the synthetic one left out), repeated in order to `count`. */
function realLines(count: number): string[] {
  const dir = new URL('../test/fixtures/jobs/', import.meta.url);
  const lines = readdirSync(dir)
    .filter((f) => f.endsWith('.log') && !f.startsWith('synthetic'))
    .flatMap((f) =>
      readFileSync(new URL(f, dir), 'utf8')
        .split('\n')
        .filter((l) => l !== ''),
    );
  return Array.from({ length: count }, (_, i) => lines[i % lines.length]!);
}

export async function benchJobLog(): Promise<void> {
  console.log('\n## Job-log parser (rules/job-patterns.yaml; real lines from test/fixtures/jobs)');
  const patterns = loadJobPatterns();
  if (!patterns.ok) throw new Error('job patterns');
  const mixed = realLines(200_000);
  // A training log as it runs: progress lines and lines of no interest, a failure now and then
  // (2 in 100 here, far more than a healthy job prints); every line a real one from the fixtures.
  const kinds = (wanted: (kind: string | undefined) => boolean) => [...new Set(mixed)].filter((l) => wanted(matchJobLine(l, patterns.value)?.kind));
  const [steps, quiet, failures] = [kinds((k) => k === 'step'), kinds((k) => k === undefined), kinds((k) => k !== undefined && k !== 'step')];
  const running = Array.from({ length: 200_000 }, (_, i) =>
    i % 100 < 2 ? failures[i % failures.length]! : i % 100 < 60 ? steps[i % steps.length]! : quiet[i % quiet.length]!,
  );
  let events = 0;
  /** What `collect job` does per line: recognise it; read the groups of every failure and of the newest progress line per batch of 1,000. */
  const collector = (lines: readonly string[]) => {
    let newestStep: { text: string; pattern: JobPattern } | undefined;
    for (let i = 0; i < lines.length; i += 1) {
      for (const part of redrawsOf(lines[i]!)) {
        const found = recogniseJobLine(part, patterns.value);
        if (!found) continue;
        if (found.match) events += 1;
        else newestStep = found;
      }
      if (i % 1_000 === 999 && newestStep) {
        if (readJobLine(newestStep.text, newestStep.pattern)) events += 1;
        newestStep = undefined;
      }
    }
    return lines.length;
  };
  /** What `parse job` does: every matching line read in full. */
  const offline = (lines: readonly string[]) => {
    for (const line of lines) for (const part of redrawsOf(line)) if (matchJobLine(part, patterns.value)) events += 1;
    return lines.length;
  };
  const progress = mixed.filter((l) => l.includes('elapsed time per iteration (ms)') || l.includes("{'loss': ") || l.includes('] step='));
  const noise = mixed.filter((l) => matchJobLine(l, patterns.value) === undefined);
  await measure("job-log parser as collect job runs it, a running job's log", 'lines/s', 7, () => collector(running));
  await measure('  the same, the fixtures in order (28% failures)', 'lines/s', 7, () => collector(mixed));
  await measure('  the same, progress lines only', 'lines/s', 7, () => collector(progress));
  await measure("every line read in full (parse job), a running job's log", 'lines/s', 7, () => offline(running));
  await measure('  the same, the fixtures in order', 'lines/s', 7, () => offline(mixed));
  await measure('  the same, progress lines only', 'lines/s', 7, () => offline(progress));
  await measure('lines no pattern matches', 'lines/s', 7, () => offline(noise));
  console.log(
    `  (a running job's log: 58% progress, 40% lines of no interest, 2% failures; the fixtures in order: ${Math.round((progress.length / mixed.length) * 100)}% progress, ${Math.round((noise.length / mixed.length) * 100)}% of no interest, the rest failures and checkpoints)`,
  );
  if (events === 0) throw new Error('the benchmark produced no events');
}
