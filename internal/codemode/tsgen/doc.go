// Package tsgen turns the hub's tool list into what a code-mode script
// sees: JavaScript identifiers for servers and tools, and TypeScript
// declarations generated from each tool's JSON Schemas, so the model that
// writes the script reads typed signatures such as
//
//	declare namespace github {
//	  function create_issue(args: {owner: string; repo: string; title: string; body?: string}): Promise<ContentBlock[]>;
//	}
//
// and calls `await github.create_issue({...})`, or the same tool by its
// listed name, `await tools["github__create_issue"]({...})`.
//
// # Identifiers
//
// [Bind] maps each server name to a namespace identifier and each tool's
// name at its server (Tool.LocalName, else Tool.Name) to a function
// identifier inside that namespace. The mapping depends only on the set of
// tools, never on their order, and is the same on every run:
//
//  1. ASCII letters, digits and '_' are kept as they are (case too: JS is
//     case-sensitive, so "GitHub" and "github" stay distinct). Every run of
//     other characters ('-', '.', ' ', '(', '$', any non-ASCII rune) becomes
//     one '_', dropped at either end: "get-user" → get_user,
//     "Git (geropl)" → Git_geropl, "2fa.check" → _2fa_check. Identifiers
//     are ASCII only, so that every JS engine and every model reads and
//     types them the same way; the exact name stays reachable through
//     tools[name] and is shown in each function's comment.
//  2. A name with nothing left becomes "tool" (a function) or "server" (a
//     namespace); one starting with a digit gets a leading '_'; the result
//     is cut to 64 bytes.
//  3. A result that is a reserved word (JS, strict mode or TypeScript, such
//     as delete, class, await, string), a JS or host global (Object, Promise,
//     JSON, eval, globalThis, fetch, ...) or a name the [Prelude] declares
//     (tools, console, ToolError, ContentBlock, ...) gets a trailing '_':
//     delete → delete_, Promise → Promise_, tools → tools_.
//  4. Collisions within a namespace (for functions) or among namespaces are
//     resolved by sorting the colliding names: a name that needed no change
//     in steps 1-3 comes first, then byte order of the original name (then of
//     Tool.Name). The first keeps the identifier; the others, in that order,
//     get the smallest suffix _2, _3, ... that no other identifier uses
//     (every unsuffixed identifier counts as used). So "get_user" keeps
//     get_user and "get-user" becomes get_user_2, whatever the input order.
//
// The mapping is stable under reordering, not under additions: a new tool
// may take a suffix another tool had.
//
// # Types
//
// [Declarations] writes one server's namespace: per tool a function
// `name(args: Args): Promise<Result>` with the tool's title and description
// as JSDoc. Result is the type of the output schema (the structured
// content) when the tool has one, else ContentBlock[]. The args parameter is
// optional when the schema requires no property. Each declaration also adds
// an entry to the ToolIndex interface, which types tools[name].
//
// Schemas map to types as follows: object properties (in their JSON order)
// become members, `?` when not required, quoted when not identifiers;
// additionalProperties and patternProperties become a string index
// signature (joined by `&` when properties have other types, which TS
// requires); an object with neither properties nor additionalProperties
// is free-form, {[key: string]: unknown} (except the top-level args, {});
// items becomes T[], a tuple form [A, B, ...unknown[]]; enum and const
// become literal unions; anyOf and oneOf unions; allOf intersections;
// "type" arrays and OpenAPI's nullable unions with null; integer is
// number. Descriptions (or titles), formats, defaults and deprecation go
// into JSDoc comments, with "*/" escaped (a title that only repeats the
// property's name is left out). Local $refs ("#", "#/$defs/X",
// "#/definitions/X", any JSON pointer into the same schema) become named
// types in a namespace merged with the function, github.create_issue.Label,
// which makes recursive schemas finite. Anything not understood, external
// refs included, is unknown; false is never.
//
// Output is bounded: nesting beyond [MaxDepth] levels is unknown, and a
// tool whose declaration exceeds [MaxToolBytes] is declared again with its
// nested types cut to unknown, or with a free-form args object, and a note
// saying so. Every input, even invalid JSON, yields declarations that parse
// as TypeScript.
//
// [Signature] renders one tool on one line, for search results.
package tsgen
