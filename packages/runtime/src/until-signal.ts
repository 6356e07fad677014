/** Resolves with the first of SIGINT or SIGTERM; a second signal exits at once. */
export function untilSignal(signals: readonly NodeJS.Signals[] = ['SIGINT', 'SIGTERM']): Promise<NodeJS.Signals> {
  return new Promise((resolve) => {
    // Signal handlers alone do not keep Node's event loop alive; an idle embedded mode would exit.
    const keepAlive = setInterval(() => {}, 1 << 30);
    const onSignal = (signal: NodeJS.Signals) => {
      clearInterval(keepAlive);
      for (const s of signals) process.off(s, onSignal);
      for (const s of signals) process.once(s, () => process.exit(130));
      resolve(signal);
    };
    for (const s of signals) process.on(s, onSignal);
  });
}
