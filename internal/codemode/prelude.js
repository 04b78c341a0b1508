// The prelude of every code-mode script (see run.go). It runs before the
// script, in strict mode, with three Go functions on the global object that
// it captures and deletes, so the script can reach Go only through the tool
// functions, console and the settle/finish plumbing built here. Names of
// functions that can appear in a stack trace start with __cm_ so that
// locating an error in the user's script can skip them.
(function __cm_prelude(hostCall, hostLog, hostDone, funcsJSON, maxOutput) {
  "use strict";
  delete globalThis.__cm_hostCall;
  delete globalThis.__cm_hostLog;
  delete globalThis.__cm_hostDone;
  // Shared memory and Atomics.wait are for threads, which a script has not.
  delete globalThis.SharedArrayBuffer;
  delete globalThis.Atomics;
  // Captured before the script runs: a script that replaces JSON.parse or
  // Map.prototype.get only breaks itself.
  const JSONparse = JSON.parse, JSONstringify = JSON.stringify;
  const StringOf = String, ErrorCtor = Error, TypeErrorCtor = TypeError;
  const isArray = Array.isArray, defineProperty = Object.defineProperty, freeze = Object.freeze;
  const PromiseCtor = Promise;
  const pending = new Map();
  const mapGet = Map.prototype.get, mapSet = Map.prototype.set, mapDelete = Map.prototype.delete;
  const funcs = JSONparse(funcsJSON);

  function __cm_tool(tool, label) {
    return function __cm_fn(args) {
      // Where the script called the tool: a failure is reported there, as
      // the rejection is made later, from the event loop.
      const site = new ErrorCtor();
      return new PromiseCtor(function __cm_call(resolve, reject) {
        if (args === undefined) args = {};
        if (args === null || typeof args !== "object" || isArray(args)) {
          throw new TypeErrorCtor(label + " takes one argument, an object of named arguments, not " +
            (args === null ? "null" : isArray(args) ? "an array" : typeof args));
        }
        let json;
        try {
          json = JSONstringify(args);
        } catch (e) {
          throw new TypeErrorCtor("the arguments of " + label + " are not JSON: " + (e && e.message));
        }
        const id = hostCall(tool, json);
        mapSet.call(pending, id, { resolve, reject, site });
      });
    };
  }

  function __cm_unknown(where, prop, names) {
    return new TypeErrorCtor("unknown tool " + where + "[" + JSONstringify(prop) + "]: " +
      (names.length ? "the tools here are " + names.map((n) => JSONstringify(n)).join(", ") : "there are no tools here") +
      "; tools[\"exact listed name\"] reaches any tool by the name it is listed under");
  }

  // A namespace is a proxy so that a misspelt tool name throws a message
  // listing the real ones, rather than "not a function".
  function namespace(where, fns) {
    const target = Object.create(null);
    for (const k in fns) target[k] = fns[k];
    freeze(target);
    const names = Object.keys(fns);
    return new Proxy(target, {
      get: function __cm_get(t, prop) {
        if (typeof prop === "symbol" || prop in t || prop === "then" || prop === "toJSON") return t[prop];
        throw __cm_unknown(where, prop, names);
      },
    });
  }

  const byNamespace = Object.create(null), byTool = Object.create(null);
  for (const f of funcs) {
    const label = f.Namespace ? f.Namespace + "." + f.Name : "tools[" + JSONstringify(f.Tool) + "]";
    const fn = __cm_tool(f.Tool, label);
    byTool[f.Tool] = fn;
    if (f.Namespace) {
      if (!byNamespace[f.Namespace]) byNamespace[f.Namespace] = Object.create(null);
      byNamespace[f.Namespace][f.Name] = fn;
    }
  }
  const skipped = [];
  for (const ns in byNamespace) {
    if (ns in globalThis || ns === "tools" || ns === "console") { skipped.push(ns); continue; }
    defineProperty(globalThis, ns, { value: namespace(ns, byNamespace[ns]), writable: true, configurable: true });
  }
  defineProperty(globalThis, "tools", { value: namespace("tools", byTool), writable: true, configurable: true });

  function format(v) {
    if (typeof v === "string") return v;
    try {
      const s = JSONstringify(v);
      if (s !== undefined) return s;
    } catch (e) { /* fall through */ }
    try { return StringOf(v); } catch (e) { return "[unprintable]"; }
  }
  function __cm_log(level) {
    return function (...args) { hostLog(level, args.map(format).join(" ")); };
  }
  const con = {
    log: __cm_log("log"), info: __cm_log("info"), debug: __cm_log("debug"),
    warn: __cm_log("warn"), error: __cm_log("error"),
  };
  defineProperty(globalThis, "console", { value: freeze(con), writable: true, configurable: true });

  function field(e, k) {
    try {
      const v = e[k];
      return v === undefined || v === null ? undefined : typeof v === "number" ? v : StringOf(v);
    } catch (x) { return undefined; }
  }
  function errorInfo(e) {
    if (e === null || (typeof e !== "object" && typeof e !== "function")) {
      let m;
      try { m = StringOf(e); } catch (x) { m = typeof e; }
      return { name: "", message: "the script threw " + m, thrown: true };
    }
    return {
      name: field(e, "name"), message: field(e, "message"), stack: field(e, "stack"),
      code: field(e, "code"), tool: field(e, "tool"), thrown: true,
    };
  }
  function finishError(e) {
    let s;
    try { s = JSONstringify(errorInfo(e)); } catch (x) { s = "{}"; }
    hostDone(false, s);
  }
  function path(holder, key) { return key === "" ? "the return value" : "the return value's \"" + key + "\""; }
  function replacer(key, v) {
    switch (typeof v) {
      case "function": throw new TypeErrorCtor(path(this, key) + " is a function; return plain data (objects, arrays, strings, numbers, booleans, null)");
      case "bigint": throw new TypeErrorCtor(path(this, key) + " is a BigInt; convert it with String(n) or Number(n)");
      case "symbol": throw new TypeErrorCtor(path(this, key) + " is a Symbol; return a string instead");
    }
    return v;
  }
  function finish(v) {
    let s;
    try {
      s = v === undefined ? "null" : JSONstringify(v, replacer);
      if (s === undefined) s = "null";
    } catch (e) {
      let m = field(e, "message") || "";
      if (/circular|cyclic/i.test(m)) m = "the return value has a cycle (an object that contains itself); return a copy without the back reference";
      hostDone(false, JSONstringify({ name: "TypeError", message: "the return value is not JSON: " + m, result: true }));
      return;
    }
    if (s.length > maxOutput) {
      hostDone(false, JSONstringify({ limit: "output", size: s.length }));
      return;
    }
    hostDone(true, s);
  }

  // What Go calls: start the script, settle an inner call.
  return function __cm_dispatch(op, a, b, c) {
    switch (op) {
      case "start":
        if (typeof a !== "function") {
          hostDone(false, JSONstringify({ name: "SyntaxError", message: "the script must be the body of a function: it closed the function it runs in" }));
          return;
        }
        PromiseCtor.resolve().then(() => a()).then(finish, finishError);
        return skipped.join(",");
      case "settle": {
        const p = mapGet.call(pending, a);
        if (!p) return;
        mapDelete.call(pending, a);
        if (b) {
          let v;
          try { v = JSONparse(c); } catch (e) { p.reject(e); return; }
          p.resolve(v);
        } else {
          const info = JSONparse(c);
          const e = new ErrorCtor(info.message);
          e.name = "ToolError";
          e.code = info.code;
          e.tool = info.tool;
          try { e.stack = p.site.stack; } catch (x) { /* keep the loop's */ }
          p.reject(e);
        }
        return;
      }
    }
  };
})
