// Lint: typescript-eslint's recommended rules over sources, tests, examples and benchmarks.
import tseslint from 'typescript-eslint';

export default tseslint.config(
  // AssemblyScript sources use decorators (@inline) that are not valid TypeScript.
  { ignores: ['**/dist/**', '**/node_modules/**', 'scratch/**', '**/*.d.ts', 'packages/*/assembly/**', 'packages/*/build/**'] },
  ...tseslint.configs.recommended,
  {
    rules: {
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_', caughtErrors: 'none' }],
      '@typescript-eslint/no-non-null-assertion': 'off',
      'no-constant-condition': ['error', { checkLoops: false }],
    },
  },
);
