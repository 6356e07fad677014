import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { loadRuleSet, type RuleSet } from '@gpualert/engine';
import { loadRoutes, type RoutesFile } from '@gpualert/notify';
import { formatRuleError, loadXidCatalog, loadYamlFile, type XidCatalog } from '@gpualert/rules';
import { priceLookup, PricesFile, type PriceLookup } from '@gpualert/usage';
import { CliError } from '../cli-error.ts';
export { firstRuleError } from './rule-error.ts';

/**
 * The files the commands load before they run (rules and Xid catalog, routes, prices), each one
 * clear line per problem with file:line and exit 2. Shared by the commands, so none of them
 * imports another for it.
 */

/** Rules and catalog, or one clear line per problem and exit 2. */
export function loadJudgement(dir: string | undefined, command: string): { ruleSet: RuleSet; catalog: XidCatalog } {
  const rules = loadRuleSet(dir);
  if (!rules.ok) throw new CliError(rules.errors.map((e) => `gpualert ${command}: ${formatRuleError(e)}`).join('\n'));
  const catalog = loadXidCatalog(dir ? `${dir}/xid-catalog.yaml` : undefined);
  if (!catalog.ok) throw new CliError(catalog.errors.map((e) => `gpualert ${command}: ${formatRuleError(e)}`).join('\n'));
  return { ruleSet: rules.value, catalog: catalog.value };
}

/** The routes file (the `routes` setting of the command), or one line per mistake and exit 2. */
export function loadRoutesOrExit(file: string, command: string): RoutesFile {
  const routes = loadRoutes(file);
  if (!routes.ok) throw new CliError(routes.errors.map((e) => `gpualert ${command}: ${formatRuleError(e)}`).join('\n'));
  return routes.value;
}

/** The routes next to the rules, when a rules directory has them. */
export function routesIn(dir: string): string | undefined {
  const file = join(dir, 'routes.yaml');
  return existsSync(file) ? file : undefined;
}

/** Prices from a YAML file, or one line per mistake with file:line: field and exit 2. */
export function loadPrices(file: string, command: string): PriceLookup {
  const loaded = loadYamlFile(file, PricesFile);
  if (!loaded.ok) throw new CliError(loaded.errors.map((e) => `gpualert ${command}: ${formatRuleError(e)}`).join('\n'));
  return priceLookup(loaded.value);
}
