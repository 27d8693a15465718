#!/usr/bin/env node
// Thin launcher: the CLI is compiled and bundled to dist/bundle/ by `npm run build` (run by
// `npm install` through `prepare`; scripts/bundle.js says why it is bundled).

// --debug prints stack traces: map the bundle's lines back to the TypeScript sources. Only then,
// as reading the source maps slows every start.
if (process.argv.includes('--debug')) process.setSourceMapsEnabled(true);

// `sluice plan ... | head` closes the pipe early: that is not an error.
process.stdout.on('error', (err) => {
  if (err.code === 'EPIPE') process.exit(0);
  throw err;
});

import('../dist/bundle/main.js')
  .then(({ main }) => main(process.argv.slice(2)))
  .then(
    (code) => {
      process.exitCode = code;
    },
    (err) => {
      console.error(err);
      process.exitCode = 1;
    },
  );
