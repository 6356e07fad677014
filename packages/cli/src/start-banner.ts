export interface ServiceLine {
  readonly name: string;
  /** `listening on port 9468`, `running`, or `NOT RUNNING: why`. */
  readonly state: string;
}

export interface BannerFacts {
  readonly mode: string;
  readonly bus: string;
  readonly store: string;
  readonly dataDir?: string;
  readonly routes: string;
  readonly services: readonly ServiceLine[];
  readonly demo: boolean;
  /** Where Alertmanager's v2 API is served, or `off: why`. */
  readonly notifierApi?: string;
  /** The live console's address, when the notifier serves it. */
  readonly console?: string;
  readonly startupMs: number;
}

/** What `gpualert up` prints first on a terminal: what runs, where its data is, what serves where. */
export function startBanner(facts: BannerFacts): string {
  const where = facts.mode === 'embedded' ? 'embedded: in-process bus, in-memory store' : `${facts.mode}: ${facts.bus} bus, ${facts.store} store`;
  const row = (name: string, value: string | undefined): [string, string][] => (value ? [[name, value]] : []);
  const rows: [string, string][] = [
    ...row('data', facts.dataDir),
    ...facts.services.map((s): [string, string] => [s.name, s.state]),
    ['alerts to', facts.routes],
    ...row('api', facts.notifierApi),
    ...row('console', facts.console),
  ];
  const width = Math.max(...rows.map(([k]) => k.length));
  const body = rows.map(([k, v]) => `  ${k.padEnd(width)}  ${v}`).join('\n');
  const next = facts.demo ? 'playing the bundled incident; alerts follow. Ctrl-C stops.' : 'alerts follow as they fire. Ctrl-C stops.';
  return `gpualert up (${where}), ready in ${facts.startupMs} ms\n${body}\n${next}\n\n`;
}
