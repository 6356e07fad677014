/** A stop signal listened for: `signalled` resolves with the first of SIGINT or SIGTERM; `release` stops listening (a start that failed). */
export interface StopSignal {
  readonly signalled: Promise<NodeJS.Signals>;
  release(): void;
}

/**
 * Listens for SIGINT and SIGTERM from now on; a second signal exits at once. Call it before a
 * service says it is ready: a supervisor that stops it on seeing the ready line must find the
 * handler in place, or the signal's default action kills the process without a clean stop.
 */
export function listenForStop(signals: readonly NodeJS.Signals[] = ['SIGINT', 'SIGTERM']): StopSignal {
  let release = () => {};
  const signalled = new Promise<NodeJS.Signals>((resolve) => {
    // Signal handlers alone do not keep Node's event loop alive; an idle embedded mode would exit.
    const keepAlive = setInterval(() => {}, 1 << 30);
    // SIGHUP asks a service to reload (the notifier adds its handler): never to die, whatever
    // part of the process is running or has failed to start.
    const onHangup = () => {};
    const onSignal = (signal: NodeJS.Signals) => {
      release();
      for (const s of signals) process.once(s, () => process.exit(130));
      resolve(signal);
    };
    release = () => {
      clearInterval(keepAlive);
      process.off('SIGHUP', onHangup);
      for (const s of signals) process.off(s, onSignal);
    };
    process.on('SIGHUP', onHangup);
    for (const s of signals) process.on(s, onSignal);
  });
  return { signalled, release: () => release() };
}

/** Resolves with the first of SIGINT or SIGTERM; a second signal exits at once. */
export function untilSignal(signals: readonly NodeJS.Signals[] = ['SIGINT', 'SIGTERM']): Promise<NodeJS.Signals> {
  return listenForStop(signals).signalled;
}

/**
 * Stops what is running, but not forever: a service stuck on a broker that no longer answers
 * must not keep the process from exiting. Past the deadline, resolves `false` (the caller exits
 * non-zero and says so).
 */
export async function stopWithin(deadlineMs: number, stop: () => Promise<void>): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<false>((resolve) => {
    timer = setTimeout(() => resolve(false), deadlineMs);
    timer.unref();
  });
  try {
    return await Promise.race([stop().then(() => true as const), late]);
  } finally {
    clearTimeout(timer);
  }
}

/**
 * After a long-running command has stopped its services, nothing it still holds (a vendor's
 * backoff timer, a socket a client library forgot) may keep the process alive past its stated
 * stop limit: exit with `code` after `graceMs` if the event loop has not emptied by then. The
 * timer is unref'd, so a process that empties its loop exits at once as usual.
 */
export function exitAfterStop(code: number, graceMs = 2_000): void {
  setTimeout(() => process.exit(code), graceMs).unref();
}
