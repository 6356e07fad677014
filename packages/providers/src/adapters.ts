import type { Provider } from '@gpualert/schema';
import type { ProviderAdapter } from './adapter.ts';
import { awsAdapter, awsImdsAdapter } from './aws.ts';
import { azureAdapter } from './azure.ts';
import { gcpAdapter } from './gcp.ts';
import { genericAdapter } from './generic.ts';
import { ociAdapter } from './oci.ts';

/** One adapter per provider. */
export const ADAPTERS: Readonly<Record<Provider, ProviderAdapter>> = {
  aws: awsAdapter,
  'aws-imds': awsImdsAdapter,
  gcp: gcpAdapter,
  azure: azureAdapter,
  oci: ociAdapter,
  generic: genericAdapter,
};
