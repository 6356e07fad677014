export function shiftClock(scope: typeof globalThis, offset: number): void;
export function clockOffsetMs(): number;
