/** Where a rented GPU's fault is reported, and what the provider asks for to find the instance. */
export interface SupportRoute {
  readonly provider: string;
  readonly route: string;
  /** What to quote in the case, besides this archive. */
  readonly quote: string;
}

/**
 * The providers' own support routes, keyed by the names the inventory (`provider`) and provider
 * events use. Taken from the providers' documentation (shared/INTEGRATIONS.md holds no support
 * routes yet), checked on 2026-12-02 against:
 * - AWS: the Support API's CreateCase, "modeled on the AWS Support Center Create Case page"
 *   (https://docs.aws.amazon.com/awssupport/latest/APIReference/API_CreateCase.html).
 * - Google Cloud: "Report faulty host" for A3/A4/A4X reserved VMs, `gcloud compute instances
 *   report-host-as-faulty` (https://cloud.google.com/ai-hypercomputer/docs/manage/report-faulty-host).
 * - Azure: Guest Health Reporting (preview) for supercomputing VMs, `PUT .../providers/Microsoft.Impact/
 *   workloadImpacts/{name}` with an impact category and the VM's resource id
 *   (Microsoft Learn, "Report Guest Health status (preview)", in MicrosoftDocs/azure-compute-docs).
 */
const ROUTES: ReadonlyMap<string, SupportRoute> = new Map<string, SupportRoute>([
  [
    'aws',
    {
      provider: 'Amazon Web Services (EC2)',
      route:
        'AWS Support Center (https://console.aws.amazon.com/support/): create a technical case for Amazon EC2; scheduled events for the instance are in the EC2 console and the AWS Health Dashboard',
      quote: 'the instance id and its region',
    },
  ],
  [
    'gcp',
    {
      provider: 'Google Cloud (Compute Engine)',
      route:
        'Google Cloud console, Support (https://console.cloud.google.com/support): create a case for Compute Engine; a reserved A3, A4 or A4X VM whose host is faulty can be reported with `gcloud compute instances report-host-as-faulty INSTANCE --fault-reasons=behavior=…,description=…` (it stops the VM and repairs the host: https://cloud.google.com/ai-hypercomputer/docs/manage/report-faulty-host)',
      quote: 'the instance id, its zone and the project',
    },
  ],
  [
    'azure',
    {
      provider: 'Microsoft Azure (Virtual Machines)',
      route:
        'Azure portal (https://portal.azure.com), Help + support: create a support request, issue type Technical, service Virtual Machines; ND-series supercomputing VMs on an allow-listed subscription can file a Guest Health Report (preview: Microsoft.Impact workloadImpacts with an impact category such as a missing GPU: Microsoft Learn, "Report Guest Health status")',
      quote:
        "the VM id (vmId), its subscription and resource group, and the physical host name Azure gives the VM (PhysicalHostName in Hyper-V's KVP pool: gpualert does not collect it)",
    },
  ],
  [
    'oci',
    {
      provider: 'Oracle Cloud Infrastructure (Compute)',
      route: 'OCI Console, Help: create a support request for Compute (or My Oracle Support, https://support.oracle.com)',
      quote: 'the instance OCID and its region',
    },
  ],
]);
// The IMDS poller names its provider `aws-imds`: the same support route.
const ALIASES: ReadonlyMap<string, string> = new Map([['aws-imds', 'aws']]);

/** The provider's route, or undefined for a provider not in the table (or none named). */
export function supportRoute(provider: string | undefined): SupportRoute | undefined {
  if (provider === undefined) return undefined;
  const name = provider.trim().toLowerCase();
  return ROUTES.get(ALIASES.get(name) ?? name);
}
