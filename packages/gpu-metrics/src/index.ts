export * from './unavailable.ts';
export * from './nvidia-smi-fields.ts';
export * from './nvidia-smi-csv.ts';
export * from './dcgm-text.ts';
export * from './dcgm-series.ts';
export * from './physical-range.ts';
