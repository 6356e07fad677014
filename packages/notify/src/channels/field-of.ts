/** A field of a parsed answer or a caught error, read without trusting its shape: undefined when it is not an object or lacks the field. */
export function fieldOf(value: unknown, key: string): unknown {
  return typeof value === 'object' && value !== null && key in value ? Reflect.get(value, key) : undefined;
}
