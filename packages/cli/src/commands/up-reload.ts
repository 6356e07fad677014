import type { ReloadResult } from '@gpualert/notifier';

/** A part of `gpualert up` that reads its files again: the errors that kept the running ones (none when it took). */
type RulesReload = () => Promise<readonly string[]>;
type RoutesReload = () => Promise<ReloadResult>;

/**
 * What `gpualert up` reads again on SIGHUP or `POST /-/reload`: the engine's rules and the
 * notifier's routes and templates, each taken whole or kept whole (a broken rules directory keeps
 * the running rules, a broken routes file the running routes). One reload at a time: a second
 * asked for while one runs waits for it and then reads the files again.
 */
export class UpReload {
  private rules: RulesReload | undefined;
  private routes: RoutesReload | undefined;
  private last: Promise<unknown> = Promise.resolve();

  /** The engine has started: its rules are read again from now on. */
  engineStarted(reload: RulesReload): void {
    this.rules = reload;
  }

  /** The notifier has started: its routes are read again from now on. */
  notifierStarted(reload: RoutesReload): void {
    this.routes = reload;
  }

  /** Both read again; refused when either's files are, with the errors of each (file:line). Never throws. */
  run(): Promise<ReloadResult> {
    const next = this.last.then(() => this.once());
    this.last = next;
    return next;
  }

  private async once(): Promise<ReloadResult> {
    const ruleErrors = this.rules ? await this.rules() : [];
    const routes: ReloadResult = this.routes ? await this.routes() : { ok: true, kept: 0, moved: 0, groups: 0 };
    if (ruleErrors.length === 0)
      return routes.ok ? routes : { ok: false, errors: routes.errors.map((e) => `routes (the running ones kept; the rules were reloaded): ${e}`) };
    // Each part says what became of it: the rules kept, the routes taken or kept too.
    const routesWere = routes.ok ? 'the routes were reloaded' : 'the routes were kept too';
    return { ok: false, errors: [...ruleErrors.map((e) => `rules (the running ones kept; ${routesWere}): ${e}`), ...(routes.ok ? [] : routes.errors)] };
  }
}
