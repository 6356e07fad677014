import { COMMON_SOURCES, CommonConfig } from '@gpualert/config';
import { z } from 'zod';
import { commandSettings } from './command-settings.ts';

/** `collect prometheus`: how it authenticates to Prometheus (a bearer token, or a user and password), from the environment only. */
export const PROMETHEUS_SETTINGS = commandSettings({
  command: 'collect-prometheus',
  schema: CommonConfig.extend({
    prometheusToken: z.string().min(1).optional(),
    prometheusUser: z.string().min(1).optional(),
    prometheusPassword: z.string().optional(),
  }),
  sources: {
    ...COMMON_SOURCES,
    prometheusToken: { env: 'GPUALERT_PROMETHEUS_TOKEN', flag: false, secret: true },
    prometheusUser: { env: 'GPUALERT_PROMETHEUS_USER', flag: false },
    prometheusPassword: { env: 'GPUALERT_PROMETHEUS_PASSWORD', flag: false, secret: true },
  },
});

/** `collect bmc`: the BMC's credentials, from a file or the environment, never a flag. */
export const BMC_SETTINGS = commandSettings({
  command: 'collect-bmc',
  schema: CommonConfig.extend({
    credentialsFile: z.string().min(1).optional(),
    bmcUsername: z.string().min(1).optional(),
    bmcPassword: z.string().optional(),
  }),
  sources: {
    ...COMMON_SOURCES,
    credentialsFile: { env: 'GPUALERT_BMC_CREDENTIALS_FILE' },
    bmcUsername: { env: 'GPUALERT_BMC_USERNAME', flag: false },
    bmcPassword: { env: 'GPUALERT_BMC_PASSWORD', flag: false, secret: true },
  },
});

/** `job report`: where the intake answers and its token (never on a command line). */
export const JOB_REPORT_SETTINGS = commandSettings({
  command: 'job-report',
  schema: z.object({
    intakeUrl: z.string().min(1).default('http://127.0.0.1:9468'),
    intakeToken: z.string().min(1).optional(),
    intakeTokenHeader: z
      .string()
      .min(1)
      .regex(/^[A-Za-z0-9-]+$/, 'expected an HTTP header name')
      .default('authorization'),
  }),
  sources: {
    intakeUrl: { env: 'GPUALERT_INTAKE_URL', flag: false, secret: true },
    intakeToken: { env: 'GPUALERT_INTAKE_TOKEN', flag: false, secret: true },
    intakeTokenHeader: { env: 'GPUALERT_INTAKE_TOKEN_HEADER', flag: false },
  },
});
