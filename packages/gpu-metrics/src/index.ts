export { isUnavailable } from './unavailable.ts';
export { chooseQueryFields, QUERY_FIELDS, supportedQueryFields } from './nvidia-smi-fields.ts';
export { countComputeApps, emptyMetrics, lostGpuMessage, parseNvidiaSmiCsv, type Unread } from './nvidia-smi-csv.ts';
export { parseNvidiaSmiXml } from './nvidia-smi-xml.ts';
export { parseNvidiaSmiQuery } from './nvidia-smi-query-text.ts';
export { nvidiaSmiShape } from './nvidia-smi-shape.ts';
export { parseDcgmText } from './dcgm-text.ts';
export { DCGM_HOST_LABELS, DcgmSeriesAccumulator, hostOfSeries } from './dcgm-series.ts';
