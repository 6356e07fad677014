export { isUnavailable } from './unavailable.ts';
export { chooseQueryFields, QUERY_FIELDS, supportedQueryFields } from './nvidia-smi-fields.ts';
export { countComputeApps, emptyMetrics, lostGpuMessage, parseNvidiaSmiCsv } from './nvidia-smi-csv.ts';
export { parseDcgmText } from './dcgm-text.ts';
export { DCGM_HOST_LABELS, DcgmSeriesAccumulator, hostOfSeries } from './dcgm-series.ts';
