import { COMMON_SOURCES, CommonConfig } from '@gpualert/config';
import { z } from 'zod';
import { commandSettings } from './command-settings.ts';

/** The commands that take only the common settings: the collectors, silences, `alert resolve`, `host forget`, `usage`. */
export const COMMON_SETTINGS = commandSettings({ command: 'common', schema: CommonConfig, sources: COMMON_SOURCES });

/** `timeline` and `report usage`: the common settings, and where the embedded mode keeps its log. */
export const READER_SETTINGS = commandSettings({
  command: 'timeline',
  schema: CommonConfig.extend({ dataDir: z.string().min(1).optional() }),
  sources: { ...COMMON_SOURCES, dataDir: { env: 'GPUALERT_DATA_DIR' } },
});
