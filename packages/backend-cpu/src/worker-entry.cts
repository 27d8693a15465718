// The file a cpu backend's worker threads load: CommonJS, so that Piscina's require() of it is a
// plain one, and the worker itself (worker.ts, an ES module) is loaded with import().
//
// Piscina loads a worker file with require() first. On Node 20.19 and later, require() of an ES
// module runs Node's synchronous module loader, and a worker terminated while it is inside that
// loader aborts the whole process ("FATAL ERROR: v8::Module::IsGraphAsync … must be used on an
// instantiated module"): Node checks the graph's top-level await after an instantiation that the
// termination cut short. A backend is disposed while its workers start whenever a pipeline stops
// after a few batches or fails early. On the development VM, pools of 15 workers disposed 0-400 ms
// after creation, in a process run with --conditions or --experimental-import-meta-resolve (as
// under vitest; the workers inherit them), aborted within 30 pools in every run
// (test/worker-start.test.ts). import() goes through the asynchronous loader, which stops cleanly.
//
// Piscina awaits the `default` export when it is not a function, so a worker reports ready once
// worker.ts has loaded, as before. If it cannot load (a missing build, a plan that does not compile
// in this thread), every task this worker is given fails with that reason, which backend.ts reports
// as a worker that failed to start (it matches the words "could not load its code").
const run = import('./worker.js').then(
  (m) => m.default,
  (e: unknown) => {
    const reason = e instanceof Error ? e.message : String(e);
    return (): never => {
      throw new Error(`the cpu worker could not load its code: ${reason}`);
    };
  },
);

export = { __esModule: true, default: run };
