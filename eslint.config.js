// The type-aware lint that runs in `npm test` (issue 22): the three rules that catch what the
// compiler does not — a promise nobody awaits, a promise where a callback's result is ignored, and
// a `switch` over a union that forgets a member.
import tseslint from 'typescript-eslint';

export default tseslint.config(
  { ignores: ['dist/**', 'node_modules/**', '**/node_modules/**', 'deploy/**', 'demo/**', 'coverage/**'] },
  {
    files: ['**/*.ts'],
    languageOptions: {
      parser: tseslint.parser,
      parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname },
    },
    plugins: { '@typescript-eslint': tseslint.plugin },
    linterOptions: { reportUnusedDisableDirectives: 'error' },
    rules: {
      '@typescript-eslint/no-floating-promises': 'error',
      '@typescript-eslint/no-misused-promises': 'error',
      '@typescript-eslint/switch-exhaustiveness-check': ['error', { considerDefaultExhaustiveForUnions: true }],
    },
  },
  // Issue 30: no `x!` and no `{...} as T` in production code. These directories are clean; the rest
  // of the tree joins this list as it is cleaned (tests may keep `!`). A `!` or `as` that truly
  // stays carries an eslint-disable-next-line comment with its reason.
  {
    files: [
      'packages/engine/**/*.ts', 'packages/rules/**/*.ts', 'packages/kernel-log/**/*.ts', 'packages/gpu-metrics/**/*.ts',
      'packages/schema/**/*.ts', 'packages/state/**/*.ts', 'packages/bus/**/*.ts', 'packages/providers/**/*.ts',
      'packages/runtime/**/*.ts', 'packages/log/**/*.ts', 'services/engine/**/*.ts', 'services/collectors/**/*.ts',
    ],
    ignores: ['**/*.test.ts', '**/*-conformance.ts'], // tests, and the suites every adapter's tests run
    rules: {
      '@typescript-eslint/no-non-null-assertion': 'error',
      '@typescript-eslint/consistent-type-assertions': ['error', { assertionStyle: 'as', objectLiteralTypeAssertions: 'never' }],
    },
  },
);
