package junction

// ResumableStreamHeader is set (to "1") by junction's Streamable HTTP
// front on a request whose SSE response stream the host can resume with
// Last-Event-ID (SEP-1699), in the header a tool finds in req.Extra: a
// stateful session at protocol 2025-11-25, answered with SSE, on a front
// that keeps the stream's messages (dataplane.HTTPOptions.ReplayBytes).
// A tool that finds it in req.Extra.Header may close its stream with
// req.Extra.CloseSSEStream and answer later: the host reconnects and gets
// the answer. Where it is absent, closing the stream would lose the
// answer. The front removes it from what hosts send.
const ResumableStreamHeader = "Junction-Resumable-Stream"
