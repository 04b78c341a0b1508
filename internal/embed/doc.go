// Package embed is the optional semantic stage of tool search: it ranks
// a hub's tools by the similarity of their text's embedding to a
// query's, through an OpenAI-compatible /v1/embeddings endpoint the
// operator configures (off by default), and fuses that ranking with the
// lexical one of internal/toolsearch. It imports the standard library
// only.
//
// # Flow
//
// [Embedder.Update] gives a source's tools ([Doc]: a name and the text
// to embed) and [Embedder.Remove] drops them, as the hub's tool lists
// change. Each tool's text is embedded once: [Embedder.Similar] embeds
// only the query (one short request, or none when the query cache has
// it), scores every candidate tool by cosine similarity, brute force
// over float32 vectors normalised at arrival (so cosine is a dot
// product; about 2 ms for 3,000 tools of 1,536 dimensions on one core,
// bound by reading their 18 MiB, see BenchmarkSimilar), and returns the
// best. [Fuse] merges that list with
// the lexical ranking. When Similar fails the caller keeps the lexical
// ranking alone.
//
// # Why a cache by content hash
//
// Vectors are keyed by the SHA-256 of the model, the dimensions and the
// text, not by tool or source: a reload, a reconnect or a new session
// that lists the same tools costs no request; two sources that share a
// tool's text share its vector; and a tool whose description changes is
// embedded again because its key changes, with no invalidation to get
// right. Vectors no tool uses any more (a source removed, a text
// changed) are kept, oldest dropped first, up to as many as the tools
// held (at least 256), so that a server restarting finds its vectors,
// while memory stays within about twice what the live tools need
// (6 KiB a tool at 1,536 dimensions).
//
// # Why the search never waits for indexing
//
// Update returns at once and a background worker embeds the new texts in
// batches (BatchSize texts a request, MaxConcurrency requests at once).
// A search could otherwise stall on hundreds of texts after a server
// connects, or on an endpoint that is down, and search is in the path of
// a model's turn. Until a tool's vector arrives Similar leaves it out:
// the tool still ranks lexically, so the ranking only improves as the
// index fills. [Embedder.Wait] is there for tests and warm-ups.
//
// # Why reciprocal rank fusion
//
// BM25 scores and cosine similarities are on scales that do not compare,
// and BM25's moves with every query, so adding scores would need a
// calibration that holds for no query in particular. RRF (Cormack,
// Clarke and Büttcher, 2009) adds 1/(k+rank) from each list: it needs
// ranks only, rewards the tools both rankings place high, lets a tool
// that only the embedding finds (a paraphrase with no word in common)
// in below those, and has one knob, the semantic list's weight.
//
// # Failures
//
// A request that fails (a transport error, a timeout, a non-2xx answer,
// a body that is not an embeddings response, the wrong number or index
// of vectors, inconsistent dimensions, a NaN or infinite value, a body
// over MaxResponseBytes) is counted in [Stats] and logged at most once a
// minute (the first failure of a burst at once, then with the count of
// those in between; one line when the endpoint recovers). After a
// failure the endpoint is left alone for a back-off (1 s, doubling to a
// minute): searches whose query is not cached fail at once instead of
// waiting out a timeout, counted as fallbacks, and the indexing resumes
// after it. Errors name the endpoint with its password and query values
// masked, say what to check, and never hold the API key.
package embed
