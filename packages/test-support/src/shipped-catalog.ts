import { formatRuleError, loadXidCatalog, type XidCatalog } from '@gpualert/rules';

/** The shipped catalog, for tests. */
export function shippedCatalog(): XidCatalog {
  const result = loadXidCatalog();
  if (!result.ok) throw new Error(result.errors.map(formatRuleError).join('\n'));
  return result.value;
}
