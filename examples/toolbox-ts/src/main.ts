// An example junction toolbox plugin in TypeScript, on Node 22 with the
// npm packages of Connect. It offers the same tools, resources and prompt
// as the Go example (examples/toolbox-go), which is what proves the
// contract language-neutral: the hub's tests run one suite against both.
//
// Run it through junction (Node 22 runs TypeScript directly):
//
//   junction toolbox mcp -- node --experimental-transform-types examples/toolbox-ts/src/main.ts
import * as http from "node:http";
import * as path from "node:path";
import { ConnectError, Code } from "@connectrpc/connect";
import type { ConnectRouter, HandlerContext } from "@connectrpc/connect";
import { connectNodeAdapter } from "@connectrpc/connect-node";
import {
  ErrorCode,
  Role,
  ToolboxService,
} from "./gen/toolbox/v1/toolbox_pb.ts";
import type {
  CallToolRequest,
  CallToolResponse,
  CallToolResult,
  Content,
} from "./gen/toolbox/v1/toolbox_pb.ts";
import type { MessageInitShape } from "@bufbuild/protobuf";
import type { CallToolResponseSchema, ContentSchema, CallToolResultSchema } from "./gen/toolbox/v1/toolbox_pb.ts";

type ContentInit = MessageInitShape<typeof ContentSchema>;
type ResultInit = MessageInitShape<typeof CallToolResultSchema>;
type EventInit = MessageInitShape<typeof CallToolResponseSchema>;

const text = (t: string): ContentInit => ({ kind: { case: "text", value: { text: t } } });

// A tool: its definition and a handler that yields progress events and
// returns the result.
interface ToolDef {
  name: string;
  description: string;
  inputSchema: object;
  outputSchema?: object;
  readOnly?: boolean;
  run: (args: any, ctx: HandlerContext, progress: (p: number, total: number, msg: string) => EventInit | null) => AsyncGenerator<EventInit, ResultInit, void>;
}

const sleep = (ms: number, signal: AbortSignal) =>
  new Promise<void>((resolve, reject) => {
    if (signal.aborted) return reject(signal.reason);
    const t = setTimeout(() => { signal.removeEventListener("abort", onAbort); resolve(); }, ms);
    const onAbort = () => { clearTimeout(t); reject(signal.reason); };
    signal.addEventListener("abort", onAbort, { once: true });
  });

const tools: ToolDef[] = [
  {
    name: "add",
    description: "Add two numbers.",
    inputSchema: { type: "object", properties: { a: { type: "number" }, b: { type: "number" } }, required: ["a", "b"] },
    outputSchema: { type: "object", properties: { sum: { type: "number" } }, required: ["sum"] },
    async *run(args) {
      const out = JSON.stringify({ sum: Number(args.a) + Number(args.b) });
      return { content: [text(out)], structuredContentJson: out };
    },
  },
  {
    name: "echo",
    description: "Echo the text back.",
    inputSchema: { type: "object", properties: { text: { type: "string", description: "the text to echo" } }, required: ["text"], additionalProperties: false },
    readOnly: true,
    async *run(args) {
      if (typeof args.text !== "string") {
        return { isError: true, error: { code: ErrorCode.INVALID_ARGUMENT, message: "text must be a string", fieldViolations: [{ field: "text", description: "not a string" }] } };
      }
      return { content: [text(args.text)] };
    },
  },
  {
    name: "fail",
    description: "Fail in the way asked.",
    inputSchema: { type: "object", properties: { mode: { type: "string", enum: ["result", "error", "rpc"] } } },
    async *run(args) {
      switch (args.mode) {
        case "error":
          return { isError: true, content: [text("the tool failed on purpose")] };
        case "rpc":
          throw new ConnectError("not allowed on purpose", Code.PermissionDenied);
      }
      return { isError: true, error: { code: ErrorCode.FAILED_PRECONDITION, message: "the widget is not ready" } };
    },
  },
  {
    name: "media",
    description: "Return one block of every content kind.",
    inputSchema: { type: "object" },
    async *run() {
      return {
        content: [
          text("text"),
          { kind: { case: "image", value: { data: new Uint8Array([0x89, 0x50, 0x4e, 0x47]), mimeType: "image/png" } }, annotations: { audience: [Role.USER], priority: 0.5 } },
          { kind: { case: "audio", value: { data: new TextEncoder().encode("RIFF"), mimeType: "audio/wav" } } },
          { kind: { case: "resourceLink", value: { uri: "example://readme", name: "readme", mimeType: "text/plain", size: 5n } } },
          { kind: { case: "resource", value: { resource: { uri: "example://logo", mimeType: "image/png", body: { case: "blob", value: new Uint8Array([1, 2, 3]) } } } } },
        ],
      };
    },
  },
  {
    name: "pid",
    description: "Return the plugin's process id.",
    inputSchema: { type: "object" },
    async *run() {
      const out = JSON.stringify({ pid: process.pid });
      return { content: [text(out)], structuredContentJson: out };
    },
  },
  {
    name: "slow",
    description: "Count steps slowly, reporting progress; stops when cancelled.",
    inputSchema: { type: "object", properties: { steps: { type: "integer" }, delay_ms: { type: "integer" } } },
    async *run(args, ctx, progress) {
      const steps = args.steps > 0 ? args.steps : 5;
      const delay = args.delay_ms > 0 ? args.delay_ms : 100;
      for (let i = 1; i <= steps; i++) {
        try {
          await sleep(delay, ctx.signal);
        } catch (e) {
          console.error(`slow: cancelled at step ${i} of ${steps}`);
          throw new ConnectError("cancelled", Code.Canceled);
        }
        const ev = progress(i, steps, `step ${i}`);
        if (ev) yield ev;
      }
      return { content: [text(`done after ${steps} steps`)] };
    },
  },
];

const resources: Record<string, { name: string; mimeType: string; read: () => MessageInitShape<typeof import("./gen/toolbox/v1/toolbox_pb.ts").ResourceContentsSchema> }> = {
  "example://logo": { name: "logo", mimeType: "image/png", read: () => ({ uri: "example://logo", mimeType: "image/png", body: { case: "blob", value: new Uint8Array([1, 2, 3]) } }) },
  "example://readme": { name: "readme", mimeType: "text/plain", read: () => ({ uri: "example://readme", mimeType: "text/plain", body: { case: "text", value: "hello from toolbox-ts" } }) },
};

function routes(router: ConnectRouter) {
  router.service(ToolboxService, {
    identity() {
      return { name: "toolbox-ts", version: "0.1.0", title: "Example TypeScript toolbox", contractVersion: 1 };
    },
    listTools() {
      return {
        tools: tools.map((t) => ({
          name: t.name,
          description: t.description,
          inputSchemaJson: JSON.stringify(t.inputSchema),
          outputSchemaJson: t.outputSchema ? JSON.stringify(t.outputSchema) : "",
          annotations: t.readOnly ? { readOnlyHint: true } : undefined,
        })),
      };
    },
    async *callTool(req: CallToolRequest, ctx: HandlerContext) {
      const tool = tools.find((t) => t.name === req.name);
      if (!tool) throw new ConnectError(`unknown tool "${req.name}"`, Code.NotFound);
      let args: any;
      try {
        args = JSON.parse(req.argumentsJson || "{}");
      } catch {
        throw new ConnectError("arguments_json is not valid JSON", Code.InvalidArgument);
      }
      const progress = (p: number, total: number, message: string): EventInit | null =>
        req.progressRequested ? { event: { case: "progress", value: { progress: p, total, message } } } : null;
      const gen = tool.run(args, ctx, progress);
      for (;;) {
        const step = await gen.next();
        if (step.done) {
          yield { event: { case: "result", value: step.value } };
          return;
        }
        yield step.value;
      }
    },
    listResources() {
      return { resources: Object.entries(resources).map(([uri, r]) => ({ uri, name: r.name, mimeType: r.mimeType })) };
    },
    readResource(req) {
      const r = resources[req.uri];
      if (!r) throw new ConnectError(`unknown resource "${req.uri}"`, Code.NotFound);
      return { contents: [r.read()] };
    },
    listPrompts() {
      return { prompts: [{ name: "greet", description: "Greet someone.", arguments: [{ name: "name", description: "who to greet", required: true }] }] };
    },
    getPrompt(req) {
      if (req.name !== "greet") throw new ConnectError(`unknown prompt "${req.name}"`, Code.NotFound);
      const name = req.arguments["name"];
      if (!name) throw new ConnectError(`prompt "greet": missing required argument "name"`, Code.InvalidArgument);
      return { description: "a greeting", messages: [{ role: Role.USER, content: text(`Please greet ${name} warmly.`) }] };
    },
    // ListResourceTemplates and Watch are left out: the hub reads
    // Unimplemented as "none".
  });
}

const token = process.env.JUNCTION_TOOLBOX_TOKEN ?? "";
const connectHandler = connectNodeAdapter({ routes });
const server = http.createServer((req, res) => {
  if (token !== "" && req.headers["authorization"] !== `Bearer ${token}`) {
    res.writeHead(401, { "content-type": "text/plain" }).end("junction toolbox: bad or missing token\n");
    return;
  }
  connectHandler(req, res);
});

function ready() {
  const addr = server.address();
  const where = typeof addr === "string" ? `unix|${addr}` : `tcp|127.0.0.1:${addr!.port}`;
  // The handshake: this line on stdout tells the hub where to connect.
  process.stdout.write(`JUNCTION_TOOLBOX|1|${where}|connect\n`);
}

const unixDir = process.env.JUNCTION_TOOLBOX_UNIX_DIR;
if (unixDir) {
  server.listen(path.join(path.resolve(unixDir), `plugin-${process.pid}.sock`), ready);
} else {
  server.listen(0, "127.0.0.1", ready);
}

for (const sig of ["SIGTERM", "SIGINT"] as const) {
  process.on(sig, () => {
    server.close(() => process.exit(0));
    server.closeAllConnections();
  });
}
