import type { Provider } from '@gpualert/schema';
import type { ProviderAdapter } from './adapter.ts';
import { awsAdapter, awsImdsAdapter } from './aws.ts';
import { azureAdapter } from './azure.ts';
import { gcpAdapter } from './gcp.ts';
import { genericAdapter } from './generic.ts';
import { ociAdapter } from './oci.ts';

/**
 * An event that names no host pages nobody: it still flows (the timeline and the maintenance
 * record keep it), but never without a warning that says why.
 */
export function warnWhenHostless(adapter: ProviderAdapter): ProviderAdapter {
  return (payload, context) => {
    const result = adapter(payload, context);
    if (!result.ok) return result;
    const warnings = result.events
      .filter((e) => e.hosts.length === 0)
      .map(
        (e) =>
          `${e.provider} event ${e.event_id} (${e.kind}, ${e.status}) names no host: no affected entity or resource in it could be read as one, so it is about nobody and pages nobody`,
      );
    return warnings.length === 0 ? result : { ...result, warnings: [...(result.warnings ?? []), ...warnings] };
  };
}

/** One adapter per provider. */
export const ADAPTERS: Readonly<Record<Provider, ProviderAdapter>> = {
  aws: warnWhenHostless(awsAdapter),
  'aws-imds': warnWhenHostless(awsImdsAdapter),
  gcp: warnWhenHostless(gcpAdapter),
  azure: warnWhenHostless(azureAdapter),
  oci: warnWhenHostless(ociAdapter),
  generic: warnWhenHostless(genericAdapter),
};
