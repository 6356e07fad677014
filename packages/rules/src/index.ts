export {
  formatRuleError, loadYamlFile, nearestOf, parseYamlText, readYamlText, withNearest, type LoadResult, type RuleFileError,
} from './load-yaml.ts';
export { loadXidCatalog, type XidCatalog } from './xid-catalog.ts';
export { bundledPath } from './bundled-path.ts';
