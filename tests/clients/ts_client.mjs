#!/usr/bin/env node
// Generic third-party client check: drive a stdio MCP server with the official
// TypeScript SDK (Client + StdioClientTransport) and print what it saw as JSON.
//
// Usage:
//   node ts_client.mjs '<spec JSON>'
//   node ts_client.mjs @spec.json
//   node ts_client.mjs -            (spec JSON on stdin)
//
// Spec:
//   {
//     "command": "/path/to/server",          required
//     "args": ["--flag", "value"],            optional
//     "cwd": "/tmp/jail",                     optional
//     "env": {"KEY": "value"},                optional, merged over the SDK's default environment
//     "timeoutMs": 10000,                     optional, per request
//     "elicit": {"approve": true},            optional: declare elicitation and answer every form with the
//                                             values given here for the properties it asks (accept); the
//                                             questions are reported as elicitations: [{message, properties}]
//     "calls": [                              optional
//       {"name": "file_read", "arguments": {"path": "a.txt"}},
//       {"name": "tool", "arguments": {}, "expectThrow": true}
//     ]
//   }
//
// Each call goes through the SDK's own client.callTool(), which (after
// listTools() cached the output schemas) validates structuredContent against the
// tool's outputSchema and throws on a mismatch or on a missing structuredContent
// in a non-error result. Such a throw is recorded as a failure for that call.
//
// Output (stdout, one JSON document):
//   {ok, protocolVersion, serverVersion, serverCapabilities, tools: [...],
//    calls: [{name, arguments, ok, threw, result|error}], failures: [...], serverStderr}
//
// Exit status: 0 if every call behaved as expected, 1 if a call failed (an
// unexpected throw, or no throw where expectThrow was set), 2 on any other
// exception (spawn, initialize, tools/list, bad spec).

import { readFileSync } from "node:fs";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { getDefaultEnvironment, StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { ElicitRequestSchema } from "@modelcontextprotocol/sdk/types.js";

const STDERR_CAP = 64 * 1024;

function readSpec(arg) {
  if (arg === undefined) {
    throw new Error("missing spec argument (JSON, @file or -)");
  }
  let text = arg;
  if (arg === "-") {
    text = readFileSync(0, "utf8");
  } else if (arg.startsWith("@")) {
    text = readFileSync(arg.slice(1), "utf8");
  }
  const spec = JSON.parse(text);
  if (typeof spec.command !== "string" || spec.command === "") {
    throw new Error("spec.command must be a non-empty string");
  }
  return spec;
}

function describeError(err) {
  if (err instanceof Error) {
    const out = { name: err.name, message: err.message };
    if (err.code !== undefined) out.code = err.code;
    if (err.data !== undefined) out.data = err.data;
    return out;
  }
  return { name: typeof err, message: String(err) };
}

function summarizeResult(result) {
  const content = Array.isArray(result.content) ? result.content : [];
  return {
    isError: result.isError === true,
    structuredContent: result.structuredContent ?? null,
    content,
    text: content
      .filter((c) => c && c.type === "text")
      .map((c) => c.text)
      .join("\n"),
    _meta: result._meta ?? null,
  };
}

async function main() {
  const spec = readSpec(process.argv[2]);
  const timeout = Number.isFinite(spec.timeoutMs) ? spec.timeoutMs : 10000;
  const report = {
    ok: false,
    protocolVersion: null,
    serverVersion: null,
    serverCapabilities: null,
    tools: [],
    calls: [],
    failures: [],
    elicitations: [],
    serverStderr: "",
  };

  const transport = new StdioClientTransport({
    command: spec.command,
    args: Array.isArray(spec.args) ? spec.args : [],
    cwd: spec.cwd,
    env: { ...getDefaultEnvironment(), ...(spec.env ?? {}) },
    stderr: "pipe",
  });
  // Collect the server's stderr (bounded) so a failure can be diagnosed.
  transport.stderr?.on("data", (chunk) => {
    if (report.serverStderr.length < STDERR_CAP) {
      report.serverStderr = (report.serverStderr + chunk.toString("utf8")).slice(0, STDERR_CAP);
    }
  });
  // The client calls setProtocolVersion() on transports that have it; stdio has
  // none, so this is only a probe to learn the negotiated version.
  transport.setProtocolVersion = (version) => {
    report.protocolVersion = version;
  };

  const answers = spec.elicit ?? null;
  const client = new Client(
    { name: "mcp-guard-ts-client-test", version: "0.0.0" },
    { capabilities: answers ? { elicitation: { form: {} } } : {} },
  );
  if (answers) {
    client.setRequestHandler(ElicitRequestSchema, async (request) => {
      const properties = request.params.requestedSchema?.properties ?? {};
      report.elicitations.push({ message: request.params.message, properties });
      const content = {};
      for (const name of Object.keys(properties)) {
        if (name in answers) content[name] = answers[name];
      }
      return { action: "accept", content };
    });
  }
  let exitCode = 0;
  try {
    await client.connect(transport, { timeout });
    report.serverVersion = client.getServerVersion() ?? null;
    report.serverCapabilities = client.getServerCapabilities() ?? null;

    // tools/list (follow pagination). listTools() also caches the output-schema
    // validators that callTool() uses.
    let cursor;
    do {
      const page = await client.listTools(cursor ? { cursor } : {}, { timeout });
      for (const tool of page.tools) {
        report.tools.push({
          name: tool.name,
          title: tool.title ?? null,
          description: tool.description ?? null,
          annotations: tool.annotations ?? null,
          inputSchema: tool.inputSchema ?? null,
          outputSchema: tool.outputSchema ?? null,
          _meta: tool._meta ?? null,
        });
      }
      cursor = page.nextCursor;
    } while (cursor);

    for (const call of Array.isArray(spec.calls) ? spec.calls : []) {
      const entry = { name: call.name, arguments: call.arguments ?? {}, ok: false, threw: false };
      try {
        const result = await client.callTool({ name: call.name, arguments: call.arguments ?? {} }, undefined, {
          timeout,
        });
        entry.result = summarizeResult(result);
        // callTool() returned, so any structuredContent passed the SDK's own
        // output-schema check (it validates only when the tool has an outputSchema).
        const tool = report.tools.find((t) => t.name === call.name);
        entry.structuredContentValidated = Boolean(tool?.outputSchema) && entry.result.structuredContent !== null;
        entry.ok = call.expectThrow !== true;
        if (!entry.ok) {
          report.failures.push(`${call.name}: expected the SDK to throw, got a result`);
        }
      } catch (err) {
        entry.threw = true;
        entry.error = describeError(err);
        entry.ok = call.expectThrow === true;
        if (!entry.ok) {
          report.failures.push(`${call.name}: ${entry.error.message}`);
        }
      }
      report.calls.push(entry);
    }
    report.ok = report.failures.length === 0;
    exitCode = report.ok ? 0 : 1;
  } catch (err) {
    report.fatal = describeError(err);
    report.failures.push(`fatal: ${report.fatal.message}`);
    exitCode = 2;
  } finally {
    try {
      await client.close();
    } catch (err) {
      report.failures.push(`close: ${describeError(err).message}`);
      exitCode = exitCode || 2;
    }
  }
  process.stdout.write(`${JSON.stringify(report, null, 2)}\n`, () => process.exit(exitCode));
}

main().catch((err) => {
  process.stderr.write(`ts_client.mjs: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
  process.exit(2);
});
