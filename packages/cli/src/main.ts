import { Command, CommanderError } from 'commander';
import { cliFailure, EXIT } from './cli-error.ts';
import { withCommonOptions } from './common-options.ts';

type Action = (...args: any[]) => Promise<number>;

/**
 * A command's code is loaded when the command runs, not when the program starts: the agent on a
 * GPU host never loads the engine, the notifier's channels or the timeline.
 */
function lazy<M, K extends keyof M>(load: () => Promise<M>, name: K): Action {
  return async (...args: unknown[]) => ((await load())[name] as Action)(...args);
}
const collectCommands = () => import('./commands/collect.ts');
const engineCommands = () => import('./commands/engine.ts');
const notifierCommands = () => import('./commands/notifier.ts');
const up = lazy(() => import('./commands/up.ts'), 'up');
const agent = lazy(() => import('./commands/agent.ts'), 'agent');
const collectGpu = lazy(collectCommands, 'collectGpu');
const collectKernel = lazy(collectCommands, 'collectKernel');
const collectInventory = lazy(collectCommands, 'collectInventory');
const collectProvider = lazy(() => import('./commands/collect-provider.ts'), 'collectProvider');
const collectPrometheus = lazy(() => import('./commands/collect-prometheus.ts'), 'collectPrometheus');
const intake = lazy(() => import('./commands/intake.ts'), 'intake');
const engine = lazy(engineCommands, 'engine');
const replay = lazy(engineCommands, 'replay');
const rulesCheck = lazy(engineCommands, 'rulesCheck');
const alertResolve = lazy(engineCommands, 'alertResolve');
const notifier = lazy(notifierCommands, 'notifier');
const silenceAdd = lazy(notifierCommands, 'silenceAdd');
const silenceList = lazy(notifierCommands, 'silenceList');
const silenceExpire = lazy(notifierCommands, 'silenceExpire');
const routesCommands = () => import('./commands/routes.ts');
const routesTest = lazy(routesCommands, 'routesTest');
const routesShow = lazy(routesCommands, 'routesShow');
const parse = lazy(() => import('./commands/parse.ts'), 'parse');
const collectBmc = lazy(() => import('./commands/collect-bmc.ts'), 'collectBmc');
const collectNetwork = lazy(() => import('./commands/collect-network.ts'), 'collectNetwork');
const parseHost = lazy(() => import('./commands/parse-bmc.ts'), 'parseHost');
/** `parse bmc|ibstat|perfquery` go to parse-bmc.ts, every other format to parse.ts. */
const parseAny: Action = (format: string, ...rest: unknown[]) => (['bmc', 'ibstat', 'perfquery'].includes(format) ? parseHost : parse)(format, ...rest);
const timeline = lazy(() => import('./commands/timeline.ts'), 'timeline');
const evidence = lazy(() => import('./commands/evidence.ts'), 'evidence');
const collectJob = lazy(() => import('./commands/collect-job.ts'), 'collectJob');
const parseJob = lazy(() => import('./commands/parse-job.ts'), 'parseJob');
const jobReport = lazy(() => import('./commands/job.ts'), 'jobReport');
/** `parse job` goes to parse-job.ts, every other format as above. */
const parseAnyOrJob: Action = (format: string, ...rest: unknown[]) => (format === 'job' ? parseJob(...rest) : parseAny(format, ...rest));
const reportCommands = () => import('./commands/report.ts');
const reportUsage = lazy(reportCommands, 'reportUsage');
const usage = lazy(reportCommands, 'usage');
const hostForget = lazy(() => import('./commands/host.ts'), 'hostForget');
const configShow = lazy(() => import('./commands/config.ts'), 'configShow');
const remediateCommands = () => import('./commands/remediate.ts');
const remediate = lazy(remediateCommands, 'remediate');
const actionList = lazy(remediateCommands, 'actionList');
const actionDecide = lazy(remediateCommands, 'actionDecide');

export function buildProgram(run: (action: Action) => (...args: any[]) => Promise<void>): Command {
  const program = new Command('gpualert')
    .description('Event-driven alerting for GPU fleets')
    .version('0.1.0')
    .showHelpAfterError('(run with --help for usage)')
    .exitOverride(); // set before the subcommands, which inherit it

  withCommonOptions(program.command('up').description('run every service in one process (embedded bus and store by default)'))
    .option('--demo', 'play a bundled incident so alerts flow without a GPU')
    .option('--speed <factor>', 'with --demo: how many times faster than real time', '120')
    .option(
      '--demo-recording <name>',
      'with --demo: incident | cooling (a chassis fan fails, two GPUs warm up: one cooling incident) | job (a 4-host training job loses a GPU: one job incident) (default incident)',
    )
    .option('--rules <dir>', 'the rules directory (default: the bundled rules/)')
    .option('--routes <file>', 'the routes file (also GPUALERT_ROUTES; default: record every decision only)')
    .option('--data-dir <dir>', 'where the embedded mode keeps its log (also GPUALERT_DATA_DIR; default ~/.local/share/gpualert)')
    .option('--intake-port <port>', 'the provider webhook intake (also GPUALERT_INTAKE_PORT; default 9468; 0 picks a free one)')
    .option(
      '--notifier-port <port>',
      "the notifier's API, Alertmanager's v2 included, when GPUALERT_NOTIFIER_TOKEN is set (also GPUALERT_NOTIFIER_PORT; default 9095; 0 picks a free one)",
    )
    .option(
      '--engine-port <port>',
      "the engine's /metrics (the fleet for Prometheus and Grafana) and /healthz (also GPUALERT_ENGINE_PORT; default 9470; 0 picks a free one)",
    )
    .action(run(up));

  withCommonOptions(program.command('agent').description('every collector a GPU host needs, in one process, with /healthz and /metrics'))
    .option('--host <host>', "this machine's id (also GPUALERT_HOST; default: the hostname)")
    .option('--label <key=value...>', 'labels for every envelope (cluster, rack, job…)')
    .option('--nvidia-smi <path>', 'the nvidia-smi binary (default nvidia-smi)')
    .option('--gpu-source <source>', 'nvidia-smi | dcgm | none (default nvidia-smi)')
    .option('--dcgm-url <url>', "with dcgm: the exporter's /metrics URL")
    .option('--gpu-interval <duration>', 'time between GPU scrapes (default 10s)')
    .option('--gpu-timeout <duration>', 'a scrape or poll slower than this is a failure (default 5s)')
    .option('--proc-root <dir>', 'where /proc and /etc/passwd are read to attribute GPU processes to jobs (default /)')
    .option('--pods-file <file>', "the kubelet's pods as JSON: namespace and pod names of GPU processes")
    .option('--slurm-jobs <file>', 'a saved squeue, sacct or scontrol show job listing: user and name of jobs a cgroup names only by id')
    .option('--kernel-source <source>', 'auto | kmsg | journal | dmesg | file | none (default auto: kmsg, else journal)')
    .option('--kernel-file <path>', 'with file: the log to follow')
    .option('--catalog <file>', 'the Xid catalog (default: the bundled one)')
    .option('--metadata <provider>', 'auto | none | aws | gcp | azure: where the inventory asks for the instance id (default auto)')
    .option('--inventory-interval <duration>', 'how often to look for inventory changes (default 5m)')
    .option('--provider <name>', "none | aws-imds | gcp | azure: poll this provider's maintenance notices (default none)")
    .option('--provider-endpoint <url>', "the metadata service's base URL (default: the provider's own)")
    .option('--provider-interval <duration>', 'time between provider polls (default 10s)')
    .option('--port <port>', '/healthz and /metrics (also GPUALERT_AGENT_PORT; default 9469; 0 picks a free one)')
    .option('--listen <address>', 'address to listen on (also GPUALERT_AGENT_LISTEN; default 0.0.0.0)')
    .action(run(agent));

  const collect = program.command('collect').description('run one collector on this host');
  const collector = (name: string, about: string) =>
    withCommonOptions(collect.command(name).description(about))
      .option('--host <host>', "this machine's id (default: the hostname)")
      .option('--label <key=value...>', 'labels for every envelope (cluster, rack, job…)')
      .option('--nvidia-smi <path>', 'the nvidia-smi binary', 'nvidia-smi');
  collector('gpu', 'GPU metrics from nvidia-smi or a DCGM exporter')
    .option('--source <source>', 'nvidia-smi | dcgm', 'nvidia-smi')
    .option('--url <url>', "with dcgm: the exporter's /metrics URL")
    .option('--interval <duration>', 'time between scrapes', '10s')
    .option('--timeout <duration>', 'a scrape slower than this is a failure', '5s')
    .option('--proc-root <dir>', 'where /proc and /etc/passwd are read to attribute GPU processes to jobs (default /)')
    .option('--pods-file <file>', "the kubelet's pods as JSON: namespace and pod names of GPU processes")
    .option('--slurm-jobs <file>', 'a saved squeue, sacct or scontrol show job listing: user and name of jobs a cgroup names only by id')
    .action(run(collectGpu));
  collector('kernel', 'the kernel log: Xid, NVLink, PCIe AER, ECC, OOM…')
    .option('--source <source>', 'kmsg | journal | dmesg | file (default: file with --file, else kmsg, else journal)')
    .option('--file <path>', 'follow this file')
    .option('--catalog <file>', 'the Xid catalog', undefined)
    .option('--topology <file>', "the host's PCI tree (lspci -tvnn, sysfs links or the inventory's JSON), so a port's AER error names the GPUs below it")
    .action(run(collectKernel));
  withCommonOptions(collect.command('provider').description("the cloud provider's maintenance notices from its metadata service"))
    .requiredOption('--provider <name>', 'aws-imds | gcp | azure')
    .option('--host <host>', "this machine's id (default: the hostname)")
    .option('--endpoint <url>', "the metadata service's base URL (default: the provider's own)")
    .option('--interval <duration>', 'time between polls', '10s')
    .option('--timeout <duration>', 'a poll slower than this is a failure', '2s')
    .action(run(collectProvider));
  withCommonOptions(
    collect.command('prometheus').description("the fleet's dcgm-exporter series through Prometheus' HTTP API: one central collector, no agent per host"),
  )
    .requiredOption(
      '--url <url>',
      "Prometheus' base URL (credentials: GPUALERT_PROMETHEUS_TOKEN, or GPUALERT_PROMETHEUS_USER and GPUALERT_PROMETHEUS_PASSWORD)",
    )
    .option('--selector <selector>', 'the series to read', '{__name__=~"DCGM_FI_.*"}')
    .option('--host-label <label...>', 'labels that name the machine, first found wins (default: Hostname, hostname; then instance without its port)')
    .option('--interval <duration>', 'time between queries', '15s')
    .option('--timeout <duration>', 'a query slower than this is a failure', '10s')
    .option('--once', 'print what one query gives, per host, and exit')
    .action(run(collectPrometheus));
  collector('inventory', "the host's fingerprint: GPUs, driver, CUDA, provider")
    .option('--metadata <provider>', 'auto | none | aws | gcp | azure: where to ask for the instance id', 'auto')
    .option('--metadata-endpoint <url>', "the metadata service's base URL (default: the provider's own)")
    .option('--interval <duration>', 'how often to look for changes', '5m')
    .option('--timeout <duration>', 'nvidia-smi and metadata timeout', '5s')
    .action(run(collectInventory));
  withCommonOptions(collect.command('job').description("a training job's log: steps, checkpoints, NCCL and CUDA failures (rules/job-patterns.yaml)"))
    .option('--host <host>', "this machine's id (default: the hostname)")
    .option('--label <key=value...>', 'labels for every envelope (cluster, team…)')
    .requiredOption('--job <id>', 'the job these lines belong to (its Slurm id, pod, run name…)')
    .option('--rank <n>', 'the rank, for lines that do not say')
    .option('--gpu <index>', 'the GPU, for lines that do not say')
    .option('--log <file>', 'follow this log file (from its end; --from-start for all of it)')
    .option('--command <cmd>', 'run this command (sh -c), pass its output through and read it; exit with its status')
    .option('--from-start', 'with --log: read the file from its start')
    .option('--patterns <file>', 'the patterns file (default: the bundled rules/job-patterns.yaml)')
    .option('--step-interval <duration>', 'at most one step event per this long (the newest)', '10s')
    .action(run(collectJob));
  withCommonOptions(collect.command('bmc').description("the BMC's fans, temperatures, PSUs, health and log (Redfish, or ipmitool)"))
    .option('--redfish <url>', "the BMC's Redfish service, https://bmc[:port]")
    .option('--targets <file>', 'many BMCs: "HOST https://BMC" per line (one process polls them all)')
    .option('--ipmitool', "read this host's BMC with ipmitool sdr elist and sel elist instead")
    .option('--ipmitool-path <path>', 'with --ipmitool: the binary', 'ipmitool')
    .option(
      '--ipmitool-args <args>',
      'with --ipmitool: arguments before the command, e.g. "-I lanplus -H bmc -U admin -E" (password in IPMI_PASSWORD, never -P)',
    )
    .option('--host <host>', 'the host the BMC manages (default: the hostname)')
    .option('--label <key=value...>', 'labels for every envelope (cluster, rack, job…)')
    .option('--auth <auth>', 'session | basic | none', 'session')
    .option('--credentials-file <file>', 'username=… and password=… lines, or JSON (also GPUALERT_BMC_CREDENTIALS_FILE)')
    .option('--ca <file>', "a PEM CA (or the BMC's own certificate) to trust")
    .option('--fingerprint <sha256>', "the SHA-256 fingerprint of the BMC's certificate (self-signed BMCs)")
    .option('--insecure-http', 'allow --auth session|basic over http:// (credentials sent in clear)')
    .option('--interval <duration>', 'time between polls of one BMC', '30s')
    .option('--timeout <duration>', 'one request (or ipmitool run) slower than this fails', '10s')
    .option('--concurrency <n>', 'polls in flight at once across all BMCs', '64')
    .addHelpText('after', '\nCredentials: GPUALERT_BMC_USERNAME and GPUALERT_BMC_PASSWORD, or --credentials-file. Never on the command line.')
    .action(run(collectBmc));
  collector('network', "the host's InfiniBand / RoCE ports: state, rate, error counters")
    .option('--root <dir>', 'where the ports are', '/sys/class/infiniband')
    .option('--interval <duration>', 'time between reads', '30s')
    .action(run(collectNetwork));

  withCommonOptions(program.command('intake').description('the provider webhook HTTP server'))
    .option('--port <port>', 'port to listen on (also GPUALERT_INTAKE_PORT; default 9468)', undefined)
    .option('--listen <address>', 'address to bind (also GPUALERT_INTAKE_LISTEN; default 0.0.0.0)')
    .option('--secrets-file <file>', 'YAML with secrets: [whsec_…] and token (also GPUALERT_INTAKE_SECRETS_FILE)')
    .addHelpText(
      'after',
      '\nSecrets: GPUALERT_INTAKE_SECRETS (whsec_…, comma-separated for rotation), GPUALERT_INTAKE_TOKEN and\nGPUALERT_INTAKE_TOKEN_HEADER for senders that cannot sign, or --secrets-file. Never on the command line.',
    )
    .action(run(intake));
  withCommonOptions(program.command('engine').description('the rules engine service'))
    .option('--rules <dir>', 'the rules directory (default: the bundled rules/)')
    .option('--clock <clock>', "wall (default) | event: whether the machine's clock moves time too", 'wall')
    .option('--metrics-port <port>', '/metrics (the fleet and the pipeline) and /healthz (also GPUALERT_ENGINE_PORT; default 9470; 0 picks a free one)')
    .action(run(engine));
  withCommonOptions(program.command('notifier').description('the notifier service'))
    .option('--routes <file>', 'the routes file (also GPUALERT_ROUTES; default: the bundled rules/routes.yaml)')
    .option('--port <port>', 'the silences API and /metrics (also GPUALERT_NOTIFIER_PORT; default 9095)')
    .option('--listen <address>', 'address to bind (also GPUALERT_NOTIFIER_LISTEN; default 0.0.0.0)')
    .option(
      '--engines <urls>',
      "the engines' ports (http://engine-0:9470,…) the console asks for the fleet's values, baselines and history (also GPUALERT_NOTIFIER_ENGINES)",
    )
    .option('--rules <dir>', "the engines' rules, binding the hosts' templates when no --engines are given (default: the bundled rules/)")
    .option(
      '--replica <name>',
      'run as this replica of a notifier cluster: every replica reads every alert, each page is sent once (also GPUALERT_NOTIFIER_REPLICA)',
    )
    .option('--peer-timeout <duration>', 'how long each replica waits for the ones before it (also GPUALERT_NOTIFIER_PEER_TIMEOUT; default 15s)')
    .action(run(notifier));

  program
    .command('parse')
    .description('raw input to normalized envelopes as JSONL on stdout')
    .argument('<format>', 'kernel | nvidia-smi | dcgm | provider | bmc | ibstat | perfquery | job')
    .argument('<file>', 'a file, or - for standard input')
    .option('--host <host>', 'the host the input came from')
    .option('--provider <name>', 'with provider: aws | aws-imds | gcp | azure | oci | generic')
    .option('--fields <list>', 'with nvidia-smi: the --query-gpu fields of output without a header')
    .option('--apps <file>', 'with nvidia-smi: --query-compute-apps output, to count processes per GPU')
    .option('--job <id>', 'with job: the job the log belongs to')
    .option('--rank <n>', 'with job: the rank, for lines that do not say')
    .option('--patterns <file>', 'with job: the patterns file (default: the bundled rules/job-patterns.yaml)')
    .option(
      '--topology <file>',
      "with kernel: the host's PCI tree (lspci -tvnn, sysfs links or the inventory's JSON), so a port's AER error names the GPUs below it",
    )
    .action(run(parseAnyOrJob));

  program
    .command('replay')
    .description('a recording through the engine, alerts as JSONL on stdout')
    .argument('<recording>', 'a JSONL recording')
    .option('--rules <dir>', 'the rules directory')
    .option('--strict', 'stop at the first line that is not an envelope (exit 2) instead of passing it over')
    .action(run(replay));

  program
    .command('rules')
    .description('rule files')
    .command('check')
    .description('validate rule and route files')
    .argument('[dir]', 'the rules directory', 'rules')
    .action(run(rulesCheck));

  withCommonOptions(program.command('timeline').description('the post-incident timeline'))
    .requiredOption('--from <time>', 'start, ISO-8601')
    .requiredOption('--to <time>', 'end, ISO-8601')
    .option('--host <host>')
    .option('--incident <fingerprint>')
    .option('--job <id>', 'narrow to one job: its events (steps included) and what happened on its GPUs')
    .option('--format <format>', 'md | json | csv | html', 'md')
    .option('--out <file>')
    .option('--data-dir <dir>', "without Kafka: the embedded mode's log (also GPUALERT_DATA_DIR)")
    .action(run(timeline));
  withCommonOptions(
    program
      .command('evidence')
      .description(
        "one .tar.gz for a provider or vendor support case: a host's GPU identity, Xid and ECC history, remapped rows, BMC SEL, timeline and actions",
      )
      .argument('<host>', 'the host (letters, digits, . - _; at most 253)'),
  )
    .option('--gpu <index|uuid>', 'narrow the per-GPU parts to one GPU: its index or its UUID')
    .option('--since <duration|time>', 'the window: back from --until (72h, 7d) or an ISO-8601 time (default 7d; at most 30d)')
    .option('--until <time>', "the window's end, ISO-8601 (default now)")
    .option('--out <file>', 'the archive (default gpualert-evidence-HOST-<time>.tar.gz here)')
    .option('--data-dir <dir>', "without Kafka: the embedded mode's log (also GPUALERT_DATA_DIR)")
    .action(run(evidence));

  const report = program.command('report').description('reports over the rollups');
  withCommonOptions(report.command('usage').description('GPU-hours and cost per group (up, busy, idle, broken, maintenance), and a bill against them'))
    .requiredOption('--from <time>', 'start, ISO-8601')
    .requiredOption('--to <time>', 'end, ISO-8601')
    .option('--by <group>', 'host | cluster | provider | model | job | user', 'host')
    .option('--prices <file>', 'price per GPU-hour (rules/prices.yaml); without it nothing is priced')
    .option('--format <format>', 'md | csv | json | html', 'md')
    .option('--input <file>', 'a JSONL file of envelopes holding usage.rollup ones (default: gpualert.usage on Kafka or the embedded log)')
    .option('--bus', 'read gpualert.usage from Kafka or the embedded log (the default without --input)')
    .option('--bill <file>', 'a provider bill to reconcile (CSV; gzip is read too)')
    .option('--bill-format <format>', 'aws-cur | gcp-billing | azure-cost | csv')
    .option('--out <file>')
    .option('--data-dir <dir>', "without Kafka: the embedded mode's log (also GPUALERT_DATA_DIR)")
    .action(run(reportUsage));
  withCommonOptions(
    program.command('usage').description('the usage rollups service: a usage.rollup per GPU per hour to gpualert.usage, and the daily idle-cost digest'),
  )
    .option('--rules <dir>', 'the rules directory (its idle-cost rule sets the busy threshold)')
    .option('--prices <file>', 'price per GPU-hour for the digest (default: the bundled rules/prices.yaml)')
    .option('--clock <clock>', 'wall (default) | event', 'wall')
    .action(run(usage));

  const silence = program.command('silence').description('silences (kept in Redis, shared with the notifier)');
  withCommonOptions(silence.command('add').description('silence what matches, for a while, with a reason'))
    .requiredOption('--match <matcher...>', 'label=value, label!=value, label=~regex, label!~regex (repeat for more)')
    .requiredOption('--for <duration>', 'how long, e.g. 2h')
    .requiredOption('--comment <text>', 'why')
    .option('--author <name>', 'who (default: the user)')
    .option('--force', 'make it even if it matches more than half of the firing alerts, on more than one host')
    .action(run(silenceAdd));
  withCommonOptions(silence.command('list').description('every silence, active, pending and expired')).action(run(silenceList));
  withCommonOptions(silence.command('expire').description('end a silence now').argument('<id>')).action(run(silenceExpire));
  const routes = program.command('routes').description('the routing tree (as amtool config routes)');
  routes
    .command('test')
    .description('which receivers an alert with these labels reaches')
    .argument('<labels...>', 'LABEL=VALUE …')
    .option('--routes <file>', 'the routes file (also GPUALERT_ROUTES)')
    .option('--verify-receivers <list>', 'exit 1 unless exactly these receivers, comma-separated')
    .action(run(routesTest));
  routes.command('show').description('the routing tree').option('--routes <file>', 'the routes file (also GPUALERT_ROUTES)').action(run(routesShow));
  const job = program.command('job').description('training jobs');
  job
    .command('report')
    .description('post one job event to the intake (GPUALERT_INTAKE_URL, GPUALERT_INTAKE_TOKEN)')
    .requiredOption('--job <id>', 'the job')
    .option('--rank <n>', 'the rank')
    .option('--gpu <index>', 'the GPU')
    .option('--step <n>', 'the step reached')
    .option('--checkpoint <outcome>', 'ok | failed: a checkpoint at --step')
    .option('--step-time <ms>', 'how long the last step took')
    .option('--message <text>', 'words for the timeline')
    .option('--host <host>', "this machine's id (default: the hostname)")
    .action(run(jobReport));
  const alert = program.command('alert').description('alerts');
  withCommonOptions(alert.command('resolve').description('resolve a latched alert by hand').argument('<fingerprint>')).action(run(alertResolve));
  const hostCommand = program.command('host').description('hosts the engine knows');
  withCommonOptions(
    hostCommand.command('forget').description('forget a decommissioned host: its engine state goes, it is no longer judged absent').argument('<host>'),
  ).action(run(hostForget));
  withCommonOptions(
    program.command('remediate').description('take broken GPU hosts out of service as the policy says: guard rails, approval and undo (Slurm or Kubernetes)'),
  )
    .option('--policy <file>', 'the remediation policy (also GPUALERT_REMEDIATION_POLICY; default the bundled rules/remediation.yaml)')
    .option('--executor <name>', 'slurm or kubernetes (also GPUALERT_REMEDIATION_EXECUTOR; default slurm)')
    .option('--dry-run', 'record what would be done and do nothing (also GPUALERT_REMEDIATION_DRY_RUN)')
    .option('--scontrol <path>', 'the scontrol binary (also GPUALERT_SCONTROL)')
    .option('--sinfo <path>', 'the sinfo binary (also GPUALERT_SINFO)')
    .option('--kubeconfig <file>', 'Kubernetes: the kubeconfig (also GPUALERT_KUBECONFIG; default KUBECONFIG, ~/.kube/config, or in-cluster)')
    .option('--evict-pods', "Kubernetes: a drain also evicts the node's pods, respecting PodDisruptionBudgets (also GPUALERT_KUBERNETES_EVICT_PODS)")
    .option(
      '--node-partition-label <label>',
      'Kubernetes: the node label naming its partition (also GPUALERT_KUBERNETES_PARTITION_LABEL; default gpualert.io/partition)',
    )
    .option('--console-url <url>', "where people reach the notifier's console: an approval's message links to the action there (also GPUALERT_CONSOLE_URL)")
    .action(run(remediate));
  const actionCommand = program.command('action').description('remediation actions on gpualert.actions');
  withCommonOptions(actionCommand.command('list').description('the actions of the last 7 days and where each stands, newest first (at most 10,000)'))
    .option('--data-dir <dir>', 'without KAFKA_BROKERS: the embedded log (also GPUALERT_DATA_DIR)')
    .option('--json', 'as JSON')
    .action(run(actionList));
  for (const [verb, decision] of [
    ['approve', 'approved'],
    ['deny', 'denied'],
  ] as const)
    withCommonOptions(actionCommand.command(verb).description(`${verb} an action waiting for a person (decided within the last 7 days)`).argument('<id>'))
      .option('--by <name>', 'who decides (default: the user)')
      .option('--comment <text>', 'why')
      .action(run((id: string, options: Record<string, unknown>) => actionDecide(decision, id, options)));
  const configCommand = program.command('config').description("gpualert's own settings");
  withCommonOptions(
    configCommand.command('show').description('the settings a command would run on here: each value (secrets by their length) and where it came from'),
  )
    .option('--command <name>', 'up | agent | engine | notifier | intake | collect-prometheus | collect-bmc | job-report | timeline | common (default up)')
    .option('--format <format>', 'text | json', 'text')
    .action(run(configShow));

  return program;
}

/**
 * Runs the command line; resolves to the exit code. One line on stderr for any failure: `error[CODE]: …`.
 * `only` keeps those top-level commands and drops the others from the program (the agent's own
 * executable: sea-agent-main.ts).
 */
export async function main(argv: readonly string[], only?: ReadonlySet<string>): Promise<number> {
  let exitCode: number = EXIT.ok;
  const run =
    (action: Action) =>
    async (...args: any[]) => {
      // commander passes (...arguments, options, command); actions take arguments and options.
      exitCode = await action(...args.slice(0, -1));
    };
  const program = buildProgram(run);
  if (only !== undefined) {
    // commander has no way to remove a command; its list is an ordinary array.
    const commands = program.commands as Command[];
    commands.splice(0, commands.length, ...commands.filter((c) => only.has(c.name())));
  }
  try {
    await program.parseAsync([...argv]);
    return exitCode;
  } catch (error) {
    if (error instanceof CommanderError) {
      // --help and --version end here with code 0; commander already printed its one line.
      return error.exitCode === 0 ? EXIT.ok : EXIT.usage;
    }
    // Every other failure: `error[CODE]: one line` (docs/errors.md), and the code's exit status.
    const failure = cliFailure(error);
    process.stderr.write(`${failure.text}\n`);
    return failure.exitCode;
  }
}
