import { bundledPath, loadYamlFile, type LoadResult } from '@gpualert/rules';
import { RoutesFile } from './route-config.ts';

export const DEFAULT_ROUTES = bundledPath('rules/routes.yaml');

export function loadRoutes(file: string = DEFAULT_ROUTES): LoadResult<RoutesFile> {
  return loadYamlFile(file, RoutesFile);
}
