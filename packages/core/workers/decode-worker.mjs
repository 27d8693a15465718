// Parquet decode worker. parquet-wasm panics (`RuntimeError: unreachable`) on a corrupt data page
// and leaves its wasm instance unusable, so decoding runs here: a panic kills this thread only,
// and the main thread reports the file and row group and starts a fresh worker.
//
// Protocol (parentPort messages):
//   in  {id, kind: 'open', source}                                    -> {id, ok, meta}
//   in  {id, kind: 'read', source, rowGroup, columns, batchSize}      -> {id, ipc} per record batch (transferred), then {id, done}
//   out {id, error} on a catchable failure.
import { parentPort } from 'node:worker_threads';
import fs from 'node:fs';
import * as pw from 'parquet-wasm';

const files = new Map();

async function open(source) {
  let f = files.get(source);
  if (f === undefined) {
    f = /^https?:\/\//.test(source)
      ? await pw.ParquetFile.fromUrl(source)
      : await pw.ParquetFile.fromFile(await fs.openAsBlob(source));
    files.set(source, f);
  }
  return f;
}

function describe(f) {
  const md = f.metadata();
  const rowGroups = [];
  for (let i = 0; i < md.numRowGroups(); i++) rowGroups.push(md.rowGroup(i).numRows());
  // The schema travels as an empty Arrow IPC stream; the main thread parses it with apache-arrow.
  return { rowGroups, numRows: md.fileMetadata().numRows(), createdBy: md.fileMetadata().createdBy() ?? null, schemaIpc: f.schema().intoIPCStream() };
}

parentPort.on('message', async (msg) => {
  const { id } = msg;
  try {
    if (msg.kind === 'open') {
      const meta = describe(await open(msg.source));
      parentPort.postMessage({ id, meta }, [meta.schemaIpc.buffer]);
    } else if (msg.kind === 'read') {
      const f = await open(msg.source);
      const stream = await f.stream({ batchSize: msg.batchSize, rowGroups: [msg.rowGroup], columns: msg.columns });
      const reader = stream.getReader();
      for (;;) {
        const { done, value } = await reader.read();
        if (done) break;
        const ipc = value.intoIPCStream();
        parentPort.postMessage({ id, ipc }, [ipc.buffer]);
      }
      parentPort.postMessage({ id, done: true });
    } else if (msg.kind === 'close') {
      const f = files.get(msg.source);
      if (f) { files.delete(msg.source); f.free(); }
      parentPort.postMessage({ id, done: true });
    }
  } catch (err) {
    parentPort.postMessage({ id, error: String(err && err.message ? err.message : err) });
  }
});
