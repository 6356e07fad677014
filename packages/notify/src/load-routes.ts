import { loadYamlFile, type LoadResult } from '@gpualert/rules';
import { RoutesFile } from './route-config.ts';

export const DEFAULT_ROUTES = new URL('../../../rules/routes.yaml', import.meta.url).pathname;

export function loadRoutes(file: string = DEFAULT_ROUTES): LoadResult<RoutesFile> {
  return loadYamlFile(file, RoutesFile);
}
