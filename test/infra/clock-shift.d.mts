export function shiftClock(scope: typeof globalThis, offset: number): void;
